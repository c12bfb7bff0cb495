"""Wiring for bindings (`SWITCHBOARD_BINDINGS`): the rules, the account lookup they may need,
and the registry that builds one agent per distinct configuration they name.

Without a bindings file none of this exists: the manager runs the one default agent and
resolves nothing per turn, so the hot path is exactly what it was.
"""

from __future__ import annotations

import structlog

from agent.backends import AgentPolicy
from channels.bindings import AccountOf, Bindings, load_bindings
from channels.message import InboundMessage
from service.settings import Settings
from storage import LinkKind, Links
from switchboard.agent_choice import AgentChoice

__all__ = [
    "agent_policy",
    "default_choice",
    "file_agents",
    "load_configured_bindings",
    "rule_choices",
]

_log = structlog.get_logger(__name__)


def default_choice(settings: Settings) -> AgentChoice:
    """The agent every conversation gets without a binding."""
    return AgentChoice(
        agent=settings.agent,
        assistant=settings.agent_assistant,
        model=settings.model,
        system_prompt=settings.system_prompt,
    )


def load_configured_bindings(settings: Settings) -> Bindings | None:
    """The bindings file's rules, checked; None when none is configured. Raises
    `BindingsError` (one line per problem) so a bad file stops start-up."""
    if settings.bindings is None:
        return None
    bindings = load_bindings(settings.bindings)
    _log.info("bindings.loaded", source=bindings.source, rules=len(bindings.rules))
    return bindings


def rule_choices(bindings: Bindings) -> list[AgentChoice]:
    """The agent each rule names on its own (a conversation may combine several rules' fields;
    those combinations are built on first use)."""
    out: list[AgentChoice] = []
    for rule in bindings.rules:
        fields = {k: v for k, v in rule.settings if k in AgentChoice.__slots__}
        if fields:
            out.append(AgentChoice(**fields))
    return out


def file_agents(bindings: Bindings) -> list[str]:
    """Every agent a rule names (the operator's, when the rules are the bindings file's)."""
    return [str(v) for rule in bindings.rules for k, v in rule.settings if k == "agent"]


def agent_policy(settings: Settings, bindings: Bindings) -> AgentPolicy:
    """What a binding's agent may be when it did not come from the operator's config."""
    policy = AgentPolicy(
        allow_python=settings.admin_allow_commands == "on",
        hosts=settings.admin_agent_host_names,
        data_dir=settings.data_dir,
        default_agent=settings.agent,
    )
    policy.file_agents(file_agents(bindings))
    return policy


def account_lookup(links: Links) -> AccountOf:
    """The account a message's place is linked to, as `channels.access` decides access: a DM by
    its sender's link (or, on Slack, its workspace's), anything else by its workspace's."""

    async def account_of(msg: InboundMessage) -> str | None:
        platform = str(msg.platform)
        if msg.is_dm:
            link = await links.link_for(LinkKind.USER, platform, msg.sender_id)
            if link is None and msg.workspace_id:
                link = await links.link_for(LinkKind.SERVER, platform, msg.workspace_id)
        else:
            link = await links.link_for(LinkKind.SERVER, platform, msg.workspace_id or msg.chat_id)
        return link.account if link is not None else None

    return account_of
