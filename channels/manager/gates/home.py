"""A person's App Home (Slack's Home tab): what the bot does, their link state, their usage, the
commands. The adapter delivers the tab's opening as a `HOME_REQUEST`; this gate answers it with
the adapter's `publish_home` and stops it there (it is not a message: no thread, no flood limit,
no access check, since the page is how a stranger learns to link). It costs the reads `/usage`
and the link gate cost: one or two Redis round trips per opening.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from channels.adapter import HOME_REQUEST, HomeView, PublishesHome
from channels.commands import COMMANDS, CommandName, Syntax, syntax_for
from channels.manager.context import MessageContext, Next, Outcome
from channels.message import InboundMessage

if TYPE_CHECKING:
    from channels.access import AccessGate
    from channels.usage import UsageDesk

__all__ = ["HomeGate", "home_view"]

_log = structlog.get_logger(__name__)

ABOUT = (
    "I'm Switchboard, an AI assistant. Write to me here or in my Chat tab; in channels, mention "
    "me and I answer in a thread."
)


class HomeGate:
    def __init__(
        self,
        access: AccessGate | None,
        usage: UsageDesk | None,
        *,
        slack_command: str,
        prefix: str,
    ) -> None:
        self._access = access
        self._usage = usage
        self._slack_command = slack_command
        self._prefix = prefix

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        native = ctx.msg.native
        if native is None or native.name != HOME_REQUEST:
            return await call_next(ctx)
        adapter = ctx.adapter
        if isinstance(adapter, PublishesHome):
            syntax = syntax_for(
                ctx.msg.platform, slack_command=self._slack_command, prefix=self._prefix
            )
            home = home_view(
                syntax,
                linked=None if self._access is None else await self._access.allows(ctx.msg),
                usage=await self._usage_text(ctx.msg),
            )
            await adapter.publish_home(ctx.msg, home)
            _log.info("home.published")
        return Outcome.ANSWERED

    async def _usage_text(self, msg: InboundMessage) -> str:
        if self._usage is None:
            return "No usage limits are set here."
        return await self._usage.usage_text(msg)


def home_view(syntax: Syntax, *, linked: bool | None, usage: str) -> HomeView:
    """The page for one person; `linked` None = this Switchboard is open to everyone."""
    if linked is None:
        link = "Anyone here can use me: no linking needed."
    elif linked:
        link = "You can use me: your DMs or this workspace are linked to a Switchboard account."
    else:
        link = (
            f"Not linked yet. Send me {syntax.show(CommandName.LINK)} in a DM to link your DMs "
            "to a Switchboard account (a workspace admin can link the whole workspace)."
        )
    commands = tuple(f"{spec.usage(syntax)} — {spec.description}" for spec in COMMANDS)
    usage = usage.removeprefix("Your usage:").strip()  # the page has its own heading
    return HomeView(about=ABOUT, link=link, usage=usage, commands=commands)
