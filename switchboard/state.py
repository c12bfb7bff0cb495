"""The values the channel manager and storage exchange: plain data both sides import.

Why a leaf: the manager talks to its stores through Protocols (`channels/manager/ports.py`) and
must not depend on `storage/`, yet it reads the same lock, queue slot, inbox entry and question
values the Redis implementations return. Defining them here, beside the error tree, lets the
manager, `storage/` and the in-memory test stand-ins share them while `channels.manager → storage`
stays forbidden (pyproject's import-linter contract). Pure: no I/O, nothing of ours but this
package. `storage/` re-exports each name from the module that produces it.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict, dataclass, field
from enum import IntEnum, StrEnum

__all__ = [
    "QUESTION_TTL_S",
    "BusyMode",
    "Claim",
    "Entry",
    "FailureRecord",
    "Ledger",
    "Lock",
    "PendingQuestion",
    "QueuedItem",
    "RateDecision",
    "Slot",
    "SlotState",
    "StopRequest",
    "ThreadState",
    "entry_arrival_ms",
    "new_question_id",
    "parse_question",
    "sortable_entry_id",
]

QUESTION_TTL_S = 7 * 24 * 3600  # People answer later; after a week the question is dropped.


@dataclass(frozen=True, slots=True)
class Entry:
    """One inbox entry handed to a worker."""

    entry_id: str
    payload: bytes
    deliveries: int = 1  # how often a consumer was handed this entry


@dataclass(frozen=True, slots=True)
class Lock:
    """A held thread lock: its token is the holder's fencing token."""

    thread_id: str
    token: str
    ttl_s: float


class Claim(StrEnum):
    NEW = "new"  # ours to handle
    DUPLICATE = "dup"  # another delivery of a message already taken
    DONE = "done"  # this very entry was handled before (reclaimed after a crash)


class RateDecision(StrEnum):
    ALLOW = "allow"
    NOTIFY = "notify"  # over the limit, first time this window: tell the sender once
    SILENT = "silent"  # over the limit and already told


@dataclass(frozen=True, slots=True)
class Admitted:
    """A message's way in, read in one round trip: its dedupe claim, its sender's flood-limit
    verdict and, when asked for, its conversation's thread (None while it was not started)."""

    claim: Claim
    rate: RateDecision
    thread_id: str | None = None


def new_question_id() -> str:
    """Short enough for Telegram's 64-byte callback data with an option index appended."""
    return secrets.token_urlsafe(9)


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """The clarification question a thread waits on, as stored and as recorded in a ledger."""

    asker_id: str
    text: str
    options: tuple[str, ...] = ()
    question_id: str = field(default_factory=new_question_id)
    expires_at: float = field(default_factory=lambda: time.time() + QUESTION_TTL_S)
    message_id: str = ""

    def to_json(self) -> str:
        data = asdict(self)
        data["options"] = list(self.options)
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: bytes | str) -> PendingQuestion:
        data = json.loads(raw)
        return cls(
            asker_id=str(data["asker_id"]),
            text=str(data["text"]),
            options=tuple(str(o) for o in data.get("options") or ()),
            question_id=str(data["question_id"]),
            expires_at=float(data["expires_at"]),
            message_id=str(data.get("message_id") or ""),
        )


def parse_question(raw: bytes | str | None) -> PendingQuestion | None:
    """The stored question, or None if absent, corrupt or past its `expires_at`."""
    if not raw:
        return None
    try:
        question = PendingQuestion.from_json(raw)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return question if question.expires_at > time.time() else None


class BusyMode(StrEnum):
    """What a message does to its conversation while a turn runs there (`SWITCHBOARD_BUSY`,
    `/queue MODE` per conversation)."""

    STEER = "steer"  # handed to the running agent before its next model call
    COLLECT = "collect"  # a burst waits a moment and becomes one turn
    INTERRUPT = "interrupt"  # cancels the running turn; the new batch answers both
    QUEUE = "queue"  # answered by the next turn
    REJECT = "reject"  # refused with a notice


class StopRequest(IntEnum):
    """What a holder's keeper found in the thread's stop flag."""

    NONE = 0
    STOP = 1  # `/stop`: end the turn, say it stopped
    INTERRUPT = 2  # a new message in `interrupt` mode: end the turn, answer the new batch


class SlotState(StrEnum):
    RUN = "run"  # the lock is ours: answer `items` (oldest first)
    QUEUED = "queued"  # another holder will answer it
    FULL = "full"  # refused: the thread already has the queue's cap of unanswered messages
    DONE = "done"  # this entry was answered before (a redelivery after a crash)
    EMPTY = "empty"  # resume: nothing is queued
    BUSY = "busy"  # a live holder has the lock (resume; submit without queueing)
    RELEASED = "released"  # finish: nothing more queued, the lock is free
    LOST = "lost"  # finish: the lock had expired (the batch is recorded answered all the same)


@dataclass(frozen=True, slots=True)
class QueuedItem:
    entry_id: str  # sortable (see `sortable_entry_id`)
    payload: bytes


@dataclass(frozen=True, slots=True)
class Ledger:
    """A batch's recorded answer (opaque to storage) and the receipts of the pieces sent."""

    record: bytes
    receipts: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Slot:
    """What a queue operation left the caller with: the lock and a batch to answer, or why not."""

    state: SlotState
    depth: int = 0
    lock: Lock | None = None
    items: list[QueuedItem] = field(default_factory=list)
    question: PendingQuestion | None = None
    attempt: int = 0  # RUN: how often the front entry's batch was taken, this time included
    ledger: Ledger | None = None  # RUN: the answer recorded by an earlier attempt, if any
    mode: BusyMode | None = None  # the conversation's own busy mode (`/queue`), if it set one


@dataclass(frozen=True, slots=True)
class ThreadState:
    """A thread at a glance, for `/status`."""

    busy: bool  # a holder has the lock
    unanswered: int  # queued messages, the batch being answered included
    question: PendingQuestion | None
    mode: BusyMode | None = None  # the conversation's own busy mode (`/queue`), if it set one


def entry_arrival_ms(entry_id: str) -> int:
    """When an inbox entry arrived (ms, Redis's clock): its stream id's first part. Raises
    ValueError for an id that is not a stream id."""
    return int(entry_id.partition("-")[0])


def sortable_entry_id(entry_id: str) -> str:
    """A stream id `ms-seq` padded so that lexical order is arrival order; an inbox shard's
    `@<tag>` stays on the end, so ids of two shards never collide."""
    sid, at, tag = entry_id.partition("@")
    ms, _, seq = sid.partition("-")
    return f"{int(ms):015d}-{int(seq or 0):08d}{at}{tag}"


@dataclass(frozen=True, slots=True)
class FailureRecord:
    """A failure a user was told about with a reference id (the failure log's entry)."""

    ref: str
    at: float  # epoch seconds
    category: str  # the error's category, as the user's message chose it
    event: str  # the log event it was logged under (turn.failed, turn.gave_up, …)
    error: str  # the exception's class name, never its message
    platform: str = ""
    chat_id: str = ""
    thread_id: str = ""
