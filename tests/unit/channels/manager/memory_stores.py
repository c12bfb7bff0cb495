"""In-memory stand-ins for the manager's store ports (channels/manager/ports.py), so the gates'
logic is tested without a network. They keep only what the ports promise, not Redis's
guarantees under concurrency: those are tested on real Redis in tests/integration."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from storage import Claim, PendingQuestion, RateDecision

__all__ = ["MemoryDedupe", "MemoryQuestions", "MemoryRate", "MemoryThreads"]


@dataclass
class MemoryDedupe:
    owners: dict[str, str] = field(default_factory=dict)  # provider id -> entry (":done" when done)

    async def claim(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> Claim:
        keys = [f"{platform}:{scope}:{p}" for p in provider_ids]
        held = {self.owners.get(k) for k in keys} - {None}
        if held - {owner, f"{owner}:done"}:
            return Claim.DUPLICATE
        if f"{owner}:done" in held:
            return Claim.DONE
        self.owners.update(dict.fromkeys(keys, owner))
        return Claim.NEW

    async def finish(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> None:
        for p in provider_ids:
            self.owners[f"{platform}:{scope}:{p}"] = f"{owner}:done"


@dataclass
class MemoryRate:
    limit: int = 20
    hits: Counter[str] = field(default_factory=Counter)

    async def hit(self, platform: str, sender_id: str) -> RateDecision:
        key = f"{platform}:{sender_id}"
        self.hits[key] += 1
        if self.hits[key] <= self.limit:
            return RateDecision.ALLOW
        return RateDecision.NOTIFY if self.hits[key] == self.limit + 1 else RateDecision.SILENT


@dataclass
class MemoryThreads:
    conversations: dict[str, str] = field(default_factory=dict)
    replies: dict[str, str] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    async def resolve(self, conversation_key: str) -> str:
        return self.conversations.setdefault(conversation_key, f"t{next(self._ids)}")

    async def peek(self, conversation_key: str) -> str | None:
        return self.conversations.get(conversation_key)

    async def start_new(self, conversation_key: str) -> str:
        self.conversations[conversation_key] = f"t{next(self._ids)}"
        return self.conversations[conversation_key]

    async def remember_messages(
        self, platform: str, chat_id: str, message_ids: list[str], thread_id: str
    ) -> None:
        for mid in message_ids:
            self.replies[f"{platform}:{chat_id}:{mid}"] = thread_id

    async def thread_for_message(self, platform: str, chat_id: str, message_id: str) -> str | None:
        return self.replies.get(f"{platform}:{chat_id}:{message_id}")


@dataclass
class MemoryQuestions:
    open: dict[str, PendingQuestion] = field(default_factory=dict)

    async def put(self, thread_id: str, question: PendingQuestion) -> None:
        self.open[thread_id] = question

    async def get(self, thread_id: str) -> PendingQuestion | None:
        return self.open.get(thread_id)

    async def thread_of(self, question_id: str) -> str | None:
        return next((t for t, q in self.open.items() if q.question_id == question_id), None)

    async def set_message(self, thread_id: str, question: PendingQuestion, message_id: str) -> None:
        return None
