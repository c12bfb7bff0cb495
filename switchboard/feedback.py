"""Votes on answers: the values the manager, `storage/feedback.py` and the admin surfaces share.

A leaf for the same reason as `switchboard.state`: the manager records votes through a Protocol
and must not import `storage/`, yet both sides read the same records.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum

__all__ = ["AnswerRef", "VoteRecord", "VoteValue"]


class VoteValue(StrEnum):
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True, slots=True)
class AnswerRef:
    """Which run a bot message answered, and for whom: how a reaction on it becomes a vote
    (a button carries its run id itself)."""

    thread_id: str
    run_id: str
    asker_id: str

    def encode(self) -> str:
        return json.dumps([self.thread_id, self.run_id, self.asker_id], separators=(",", ":"))

    @classmethod
    def decode(cls, raw: str | bytes) -> AnswerRef | None:
        """None for a value this release cannot read."""
        try:
            thread_id, run_id, asker_id = json.loads(raw)
        except (ValueError, TypeError):
            return None
        return cls(str(thread_id), str(run_id), str(asker_id))


@dataclass(frozen=True, slots=True)
class VoteRecord:
    """One person's vote on one answer (one per user per answer; a later vote replaces it)."""

    platform: str
    user_id: str
    run_id: str
    value: VoteValue
    at: float  # epoch seconds of the latest change
    thread_id: str = ""
    chat_id: str = ""
    message_id: str = ""

    @property
    def field(self) -> str:
        """The vote's identity: one per platform, answer (run) and user."""
        return f"{self.platform}|{self.run_id}|{self.user_id}"

    def encode(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def decode(cls, raw: str | bytes) -> VoteRecord | None:
        try:
            doc = json.loads(raw)
            return cls(
                platform=str(doc["platform"]),
                user_id=str(doc["user_id"]),
                run_id=str(doc["run_id"]),
                value=VoteValue(doc["value"]),
                at=float(doc["at"]),
                thread_id=str(doc.get("thread_id", "")),
                chat_id=str(doc.get("chat_id", "")),
                message_id=str(doc.get("message_id", "")),
            )
        except (ValueError, TypeError, KeyError):
            return None
