"""What adapters ask before dropping a message: whether a place answers without a mention and
which bots' messages it takes (`require_mention`, `allow_bots`).

Adapters decide this on arrival, so it is in memory and pure: the rules in force, matched on
what the event carries (no account: rules that match on an account cannot set these two). With
no bindings file adapters get no policy at all and behave as they always have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from channels.bindings.rules import Bindings, Subject

__all__ = ["DEFAULT_POLICY", "PlacePolicies", "PlacePolicy", "PolicyFor"]

BotPolicy = Literal["none", "mentions", "all"]


@dataclass(frozen=True, slots=True)
class PlacePolicy:
    require_mention: bool = True  # in channels and groups: answer only when addressed
    allow_bots: BotPolicy = "none"  # other bots' messages: never, when they mention us, always

    def takes_bot(self, *, mentioned: bool) -> bool:
        """Whether another bot's message is for us here."""
        return self.allow_bots == "all" or (self.allow_bots == "mentions" and mentioned)


DEFAULT_POLICY = PlacePolicy()
PolicyFor = Callable[[Subject], PlacePolicy]
_ARRIVAL = frozenset({"require_mention", "allow_bots"})


class PlacePolicies:
    """A `PolicyFor` over the bindings currently in force (`current` is read per message, so a
    reload applies to the next one)."""

    def __init__(self, current: Callable[[], Bindings]) -> None:
        self._current = current
        self._seen: Bindings | None = None
        self._matters = False

    def __call__(self, subject: Subject) -> PlacePolicy:
        bindings = self._current()
        if bindings is not self._seen:  # a reload: see whether any rule sets these at all
            self._seen = bindings
            self._matters = any(n in _ARRIVAL for r in bindings.rules for n, _ in r.settings)
        if not self._matters:
            return DEFAULT_POLICY
        effective = bindings.resolve(subject)
        return PlacePolicy(
            require_mention=effective.get("require_mention") is not False,
            allow_bots=effective.get("allow_bots") or "none",
        )
