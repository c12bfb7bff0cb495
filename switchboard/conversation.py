"""One earlier message of a conversation, as the agent is shown it: plain values every layer shares.

Adapters read these from their platform (a Slack thread, a Discord reply chain, the message a
Telegram reply quotes), the manager chooses which ones a turn gets and caches them in Redis, and
the agent runtime renders them as one quoted block. A leaf type, because all three layers hand it
on and the platform adapters may not import the agent: no SDK object, only strings and numbers,
so it round-trips through JSON (`as_dict` / `from_dict`) in inbox payloads and the cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ContextMark", "ContextMessage", "ContextState", "message_order"]


@dataclass(frozen=True, slots=True)
class ContextMessage:
    """An earlier message: who wrote it (a display name, already free of mention syntax), when
    (epoch seconds, UTC), its text as the platform shows it, and its files by name only."""

    message_id: str  # the platform's id (Slack ts, Discord snowflake, Telegram message id)
    sender: str
    sent_at: float
    text: str
    attachments: tuple[str, ...] = ()
    is_self: bool = False  # the bot's own message
    replied_to: bool = False  # the trigger replies to it (or to a message that replies to it)
    reply_to_id: str = ""  # the message this one replies to, where the platform says
    quote: str = ""  # the part of it the reply quotes (Telegram), if any

    def as_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "sender": self.sender,
            "sent_at": self.sent_at,
            "text": self.text,
            "attachments": list(self.attachments),
            "is_self": self.is_self,
            "replied_to": self.replied_to,
            "reply_to_id": self.reply_to_id,
            "quote": self.quote,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextMessage:
        """Undo `as_dict`; unknown keys (a newer release) are ignored, missing ones defaulted.
        Raises TypeError or ValueError for data that is not such a message."""
        if not isinstance(data, Mapping):
            raise TypeError("a context message is not an object")
        return cls(
            message_id=str(data["message_id"]),
            sender=str(data.get("sender") or ""),
            sent_at=float(data.get("sent_at") or 0.0),
            text=str(data.get("text") or ""),
            attachments=tuple(str(a) for a in data.get("attachments") or ()),
            is_self=bool(data.get("is_self")),
            replied_to=bool(data.get("replied_to")),
            reply_to_id=str(data.get("reply_to_id") or ""),
            quote=str(data.get("quote") or ""),
        )


def message_order(message_id: str) -> tuple[int, int]:
    """A sort key for one chat's message ids, oldest first: Slack's `1700000000.000100` splits
    into its two integers (a float would lose the microseconds), Discord snowflakes and Telegram
    ids are one integer. An id that is neither sorts first."""
    whole, _, fraction = message_id.partition(".")
    try:
        return int(whole), int(fraction or 0)
    except ValueError:
        return -1, 0


@dataclass(frozen=True, slots=True)
class ContextMark:
    """How far a thread's agent has seen its conversation: `at` is the newest message of the
    last turn that was given context (later turns catch up from there); `previous` is the mark
    before that turn, so the same batch taken again (a retry) is shown what its first attempt
    was shown. Stored as `<previous>|<at>`."""

    at: str
    previous: str | None = None

    def since(self, trigger: str) -> str | None:
        """Where a turn ending in `trigger` catches up from (None: from the beginning)."""
        return self.previous if trigger == self.at else self.at

    def encode(self) -> str:
        return f"{self.previous or ''}|{self.at}"

    @classmethod
    def decode(cls, raw: str) -> ContextMark | None:
        previous, sep, at = raw.partition("|")
        if not sep or not at:
            return None
        return cls(at=at, previous=previous or None)


@dataclass(frozen=True, slots=True)
class ContextState:
    """One thread's context bookkeeping as a turn finds it (`storage.ContextRecords.load`)."""

    mark: ContextMark | None = None
    cached: tuple[ContextMessage, ...] | None = None  # None: nothing cached (or it expired)
    observed: tuple[ContextMessage, ...] = ()  # newest first
