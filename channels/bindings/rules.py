"""Binding rules and how one conversation's effective settings are chosen from them.

A rule is a flat mapping of match keys (`platform`, `workspace`, `channel`, `user`,
`discord_role`, `account`) and settings (`agent`, `assistant`, `model`, `system_prompt`, `busy`,
`streaming`, `require_mention`, `allow_bots`, `sessions`). A rule matches when every match key
it names equals the conversation's value. Each setting comes from the most specific matching rule
that sets it: a rule naming a channel, user or role beats one naming a workspace, which beats an
account, which beats a platform (more keys of a level beat fewer); between equally specific rules
the first in the file wins. A setting no rule sets keeps the operator's default. Pure: the
resolver (`resolver.py`) supplies the account, the loader (`load.py`) builds the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from switchboard.agent_choice import AgentChoice
from switchboard.state import BusyMode

__all__ = [
    "MATCH_KEYS",
    "NO_BINDING",
    "SETTING_KEYS",
    "Bindings",
    "Effective",
    "Rule",
    "Subject",
]

MATCH_KEYS = ("platform", "workspace", "channel", "user", "discord_role", "account")
SETTING_KEYS = (
    "agent",
    "assistant",
    "model",
    "system_prompt",
    "busy",
    "streaming",
    "require_mention",
    "allow_bots",
    "sessions",
)
_AGENT_KEYS = ("agent", "assistant", "model", "system_prompt")


@dataclass(frozen=True, slots=True)
class Subject:
    """What a rule can match on, for one message."""

    platform: str
    workspace: str = ""
    channel: str = ""
    user: str = ""
    roles: tuple[str, ...] = ()  # the sender's Discord role ids
    parent: str = ""  # Discord: the channel a thread belongs to; `channel` rules match it too
    account: str | None = None  # the Switchboard account the place is linked to, if any


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the file; `position` is its 1-based place, `line` where it starts (0: unknown)."""

    position: int
    match: tuple[tuple[str, str], ...]
    settings: tuple[tuple[str, Any], ...]
    line: int = 0

    @property
    def specificity(self) -> tuple[int, int, int, int]:
        names = {name for name, _ in self.match}
        return (
            len(names & {"channel", "user", "discord_role"}),
            int("workspace" in names),
            int("account" in names),
            int("platform" in names),
        )

    def matches(self, subject: Subject) -> bool:
        for name, want in self.match:
            if name == "discord_role":
                if want not in subject.roles:
                    return False
            elif name == "account":
                if subject.account != want:
                    return False
            elif name == "channel":
                if want not in (subject.channel, subject.parent):
                    return False
            elif getattr(subject, name) != want:
                return False
        return True

    def label(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        keys = ", ".join(f"{name}={value}" for name, value in self.match)
        return f"rule {self.position}{where}: {keys}"


@dataclass(frozen=True, slots=True)
class Effective:
    """A conversation's settings after the bindings: None where the default applies."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, Rule] = field(default_factory=dict)  # setting -> the rule it came from
    matched: tuple[Rule, ...] = ()  # every matching rule, most specific first

    def get(self, name: str) -> Any:
        return self.values.get(name)

    @property
    def agent(self) -> AgentChoice | None:
        """The agent the bindings chose, or None for the default one."""
        chosen = {k: self.values[k] for k in _AGENT_KEYS if k in self.values}
        return AgentChoice(**chosen) if chosen else None

    @property
    def busy(self) -> BusyMode | None:
        value = self.values.get("busy")
        return BusyMode(value) if value else None


NO_BINDING = Effective()


@dataclass(frozen=True, slots=True)
class Bindings:
    """The rules of one bindings file, in file order."""

    rules: tuple[Rule, ...] = ()
    source: str = ""  # the file (or "admin API") they came from, for explanations
    digest: str = ""  # of the file's text, when they came from a file

    def to_doc(self) -> list[dict[str, Any]]:
        """The rules as plain data (what `parse_bindings` reads back), for storing and showing."""
        return [dict(rule.match) | dict(rule.settings) for rule in self.rules]

    @property
    def uses_account(self) -> bool:
        """Whether any rule matches on the linked account (which costs a lookup)."""
        return any(name == "account" for rule in self.rules for name, _ in rule.match)

    def resolve(self, subject: Subject) -> Effective:
        matched = [rule for rule in self.rules if rule.matches(subject)]
        if not matched:
            return NO_BINDING
        matched.sort(key=lambda r: (*(-n for n in r.specificity), r.position))
        values: dict[str, Any] = {}
        sources: dict[str, Rule] = {}
        for rule in matched:
            for name, value in rule.settings:
                if name not in values:
                    values[name] = value
                    sources[name] = rule
        return Effective(values, sources, tuple(matched))
