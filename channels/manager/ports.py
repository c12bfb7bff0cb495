"""The stores the manager needs, as the manager sees them: Protocols at its edge.

`storage/` provides the Redis implementations (every guarantee in the README rests on them), and
`service/` builds them and hands them in: the manager never imports `storage` (an import-linter
contract holds it to that). The values crossing this edge live in the leaf `switchboard.state`.
`tests/fakes/memory_ports.py` has an in-memory twin of every port with the same semantics (a
contract test runs both), so the manager's parts are unit-tested without a network, with a
failure injected at every await. Each Protocol lists exactly the calls the manager makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from switchboard.conversation import ContextMark, ContextMessage, ContextState
from switchboard.state import (
    Admitted,
    BusyMode,
    Claim,
    Entry,
    FailureRecord,
    Lock,
    PendingQuestion,
    QueuedItem,
    RateDecision,
    Slot,
    StopRequest,
    ThreadState,
)

__all__ = [
    "AdmissionStore",
    "ContextStore",
    "DedupeStore",
    "FailureStore",
    "InboxStore",
    "LockStore",
    "OrphanStore",
    "QuestionStore",
    "QueueStore",
    "RateStore",
    "ThreadStore",
]


class InboxStore(Protocol):
    claim_idle_ms: int
    shards: int  # streams read one by one (`read`'s `shard`), each by its own reader

    async def ensure_group(self) -> None: ...
    async def append(self, payload: bytes, route: str = "") -> str: ...
    async def read(self, count: int, block_s: float, shard: int = 0) -> list[Entry]: ...
    async def reclaim(self, count: int) -> tuple[list[Entry], list[str]]: ...
    async def touch(self, ids: list[str]) -> None: ...
    async def finish(self, ids: list[str]) -> None: ...
    async def chat_waiting(self, entry_id: str, route: str, until_ms: int) -> tuple[int, bool]: ...
    async def backlog(self) -> int: ...
    async def observe(self) -> None: ...


class FailureStore(Protocol):
    async def record(self, failure: FailureRecord) -> None: ...


class DedupeStore(Protocol):
    async def claim(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> Claim: ...
    async def finish(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> None: ...


class ThreadStore(Protocol):
    async def resolve(self, conversation_key: str) -> str: ...
    async def peek(self, conversation_key: str) -> str | None: ...
    async def start_new(self, conversation_key: str) -> str: ...
    async def remember_messages(
        self, platform: str, chat_id: str, message_ids: list[str], thread_id: str
    ) -> None: ...
    async def thread_for_message(
        self, platform: str, chat_id: str, message_id: str
    ) -> str | None: ...


class LockStore(Protocol):
    async def keep(self, lock: Lock) -> tuple[bool, StopRequest]: ...
    async def release(self, lock: Lock) -> bool: ...
    async def request_stop(self, thread_id: str, *, interrupt: bool = False) -> bool: ...


class QueueStore(Protocol):
    async def submit(
        self,
        thread_id: str,
        entry_id: str,
        payload: bytes,
        token: str,
        *,
        busy: BusyMode = BusyMode.QUEUE,
    ) -> Slot: ...
    async def resume(self, thread_id: str, token: str) -> Slot: ...
    async def finish(self, lock: Lock, answered: list[str], question_id: str = "") -> Slot: ...
    async def record(self, lock: Lock, record: bytes) -> bool: ...
    async def receipt(self, thread_id: str, sent: dict[int, str]) -> None: ...
    async def absorb(self, lock: Lock, after: str, limit: int = ...) -> list[QueuedItem] | None: ...
    async def set_mode(self, thread_id: str, mode: BusyMode | None) -> None: ...
    async def state(self, thread_id: str) -> ThreadState: ...
    async def running(self, thread_id: str) -> bytes | None: ...


class OrphanStore(Protocol):
    async def watch(self, thread_id: str, after_s: float | None = None) -> None: ...
    async def due(self, limit: int = 50) -> list[tuple[str, float]]: ...
    async def forget(self, thread_id: str, seen: float) -> None: ...


class QuestionStore(Protocol):
    async def put(self, thread_id: str, question: PendingQuestion) -> None: ...
    async def get(self, thread_id: str) -> PendingQuestion | None: ...
    async def thread_of(self, question_id: str) -> str | None: ...
    async def set_message(
        self, thread_id: str, question: PendingQuestion, message_id: str
    ) -> None: ...


class RateStore(Protocol):
    async def hit(
        self, platform: str, sender_id: str, message_id: str | None = None
    ) -> RateDecision: ...


class AdmissionStore(Protocol):
    """The dedupe claim and the flood-limit hit of one message, and its conversation's thread
    when asked, in one round trip."""

    async def admit(
        self,
        platform: str,
        provider_ids: list[str],
        *,
        scope: str,
        owner: str,
        sender_id: str,
        message_id: str,
        conversation: str | None = None,
    ) -> Admitted: ...


class ContextStore(Protocol):
    """Conversation context: each thread's mark and cached context, and the messages observed
    in group chats (`channels/manager/turns/history.py`)."""

    async def load(
        self,
        thread_id: str,
        *,
        observed: tuple[str, str] | None = None,
        before: str = "",
        limit: int = 0,
    ) -> ContextState: ...
    async def save(
        self,
        thread_id: str,
        *,
        mark: ContextMark,
        cache: Sequence[ContextMessage] | None = None,
    ) -> None: ...
    async def observe(
        self, platform: str, place: str, message: ContextMessage, *, keep: int
    ) -> None: ...
