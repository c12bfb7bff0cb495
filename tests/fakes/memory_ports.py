"""In-memory twins of every store port the manager uses (channels/manager/ports.py), with the
semantics of the Redis implementations in storage/, so the manager's parts can be unit-tested
without a network and with a failure injected at any await.

Each operation below follows its Redis script step by step (same keys, same order, same answers):
submit/resume/finish/record/receipt as in storage/thread_queue.py, keep/release/stop as in
storage/locks.py, claim/finish as in storage/dedupe.py, load/save/observe as in
storage/context.py, and so on. Time is a `MemoryClock` the test moves (`advance`), so lock TTLs,
idle entries, backoffs and rate windows pass without waiting. Each method runs to completion
without yielding, which is what a Lua script's atomicity amounts to in one event loop. tests/integration/storage/test_port_contract.py runs the same scenarios on these
and on real Redis, so the two cannot drift apart.

What is not modelled: Redis's own failures (the fault tests inject those around the ports), and
`parse_question`'s expiry, which reads the wall clock on both sides.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from channels.manager.config import ManagerStores
from storage.context import CONTEXT_CACHE_TTL_S, OBSERVED_TTL_S
from storage.dedupe import DEDUPE_TTL_S
from storage.inbox import INBOX_MAX_LEN, InboxFull
from storage.locks import LOCK_TTL_S, STOP_TTL_S
from storage.thread_map import REPLIES_PER_THREAD, THREAD_TTL_S
from storage.thread_queue import DONE_TTL_S, MODE_TTL_S, QUEUE_CAP, QUEUE_TTL_S
from switchboard.conversation import ContextMark, ContextMessage, ContextState, message_order
from switchboard.state import (
    Admitted,
    BusyMode,
    Claim,
    Entry,
    Ledger,
    Lock,
    PendingQuestion,
    QueuedItem,
    RateDecision,
    Slot,
    SlotState,
    StopRequest,
    ThreadState,
    parse_question,
    sortable_entry_id,
)

__all__ = [
    "MemoryAdmission",
    "MemoryClock",
    "MemoryContext",
    "MemoryDedupe",
    "MemoryInbox",
    "MemoryLocks",
    "MemoryOrphans",
    "MemoryPorts",
    "MemoryQuestions",
    "MemoryQueue",
    "MemoryRate",
    "MemoryStream",
    "MemoryThreads",
    "Space",
]


class MemoryClock:
    """Unix time that moves only when the test says so."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else start

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds


class Space:
    """A keyspace with TTLs on the clock: strings, hashes (dict) and sorted sets (dict member →
    score), the shapes the scripts use. A key past its TTL is gone, as in Redis."""

    def __init__(self, clock: MemoryClock) -> None:
        self.clock = clock
        self._data: dict[str, Any] = {}
        self._expires: dict[str, float] = {}

    def _live(self, key: str) -> bool:
        expires = self._expires.get(key)
        if expires is not None and expires <= self.clock():
            self._data.pop(key, None)
            self._expires.pop(key, None)
        return key in self._data

    def get(self, key: str) -> Any:
        return self._data[key] if self._live(key) else None

    def exists(self, key: str) -> bool:
        return self._live(key)

    def set(
        self, key: str, value: Any, ttl_s: float | None = None, *, keep_ttl: bool = False
    ) -> None:
        kept = self._expires.get(key) if keep_ttl and self._live(key) else None
        self._data[key] = value
        self._expires.pop(key, None)
        expires = self.clock() + ttl_s if ttl_s is not None else kept
        if expires is not None:
            self._expires[key] = expires

    def delete(self, *keys: str) -> None:
        for key in keys:
            self._data.pop(key, None)
            self._expires.pop(key, None)

    def expire(self, key: str, ttl_s: float) -> None:
        if self._live(key):
            self._expires[key] = self.clock() + ttl_s

    def ttl(self, key: str) -> float | None:
        """Seconds left, None without a TTL (or without the key)."""
        if not self._live(key) or key not in self._expires:
            return None
        return self._expires[key] - self.clock()

    def container(self, key: str) -> dict[Any, Any]:
        """The hash or sorted set at `key`, created empty (an empty one is deleted by `prune`)."""
        if not self._live(key):
            self._data[key] = {}
        value = self._data[key]
        assert isinstance(value, dict)
        return value

    def view(self, key: str) -> dict[Any, Any]:
        """The hash or sorted set at `key` for reading ({} when absent)."""
        value = self.get(key)
        return value if isinstance(value, dict) else {}

    def prune(self, key: str) -> None:
        """Redis deletes a hash or sorted set whose last member went."""
        if self._live(key) and self._data[key] == {}:
            self.delete(key)


# -- thread keys, named as in storage/keys.py -------------------------------------------------


def _lock(t: str) -> str:
    return f"{{{t}}}:lock"


def _q(t: str) -> str:
    return f"{{{t}}}:q"


def _qmsg(t: str) -> str:
    return f"{{{t}}}:qmsg"


def _done(t: str) -> str:
    return f"{{{t}}}:done"


def _stop(t: str) -> str:
    return f"{{{t}}}:stop"


def _busy(t: str) -> str:
    return f"{{{t}}}:busy"


def _mode(raw: str | None) -> BusyMode | None:
    try:
        return BusyMode(raw) if raw else None
    except ValueError:
        return None


def _question(t: str) -> str:
    return f"{{{t}}}:question"


def _warnings(t: str) -> str:
    return f"{{{t}}}:warn"


def _tries(t: str) -> str:
    return f"{{{t}}}:tries"


def _ledger(t: str) -> str:
    return f"{{{t}}}:ledger"


class MemoryLocks:
    """storage/locks.py's ThreadLocks: token-checked keep and release, the `/stop` flag."""

    def __init__(self, space: Space) -> None:
        self._s = space

    async def keep(self, lock: Lock) -> tuple[bool, StopRequest]:
        s, t = self._s, lock.thread_id
        if s.get(_lock(t)) != lock.token:
            return False, StopRequest.NONE
        s.expire(_lock(t), lock.ttl_s)
        flag = s.get(_stop(t))
        if flag in ("1", "i"):
            s.set(_stop(t), f"beat:{secrets.token_hex(6)}", keep_ttl=True)
            return True, StopRequest.STOP if flag == "1" else StopRequest.INTERRUPT
        return True, StopRequest.NONE

    async def release(self, lock: Lock) -> bool:
        if self._s.get(_lock(lock.thread_id)) != lock.token:
            return False
        self._s.delete(_lock(lock.thread_id))
        return True

    async def request_stop(self, thread_id: str, *, interrupt: bool = False) -> bool:
        if not self._s.exists(_lock(thread_id)):
            return False
        if interrupt and self._s.get(_stop(thread_id)) == "1":
            return True  # a pending /stop outranks it
        self._s.set(_stop(thread_id), "i" if interrupt else "1", STOP_TTL_S)
        return True


class MemoryQueue:
    """storage/thread_queue.py's ThreadQueue, script by script."""

    def __init__(
        self, space: Space, *, lock_ttl_s: float = LOCK_TTL_S, cap: int = QUEUE_CAP
    ) -> None:
        self._s = space
        self.lock_ttl_s = lock_ttl_s
        self.cap = cap

    # -- the scripts' shared tail (_TAKE) ---------------------------------------------------

    def _take_lock(self, t: str, token: str) -> None:
        self._s.set(_lock(t), token, self.lock_ttl_s)
        self._s.delete(_stop(t), _warnings(t))

    def _attempt(self, t: str, front: str | None, token: str, ttl_s: float) -> int:
        if front is None:
            return 0
        n, last = 0, ""
        raw = self._s.view(_tries(t)).get(front)
        if raw is not None and "|" in raw:
            count, _, last = raw.partition("|")
            n = int(count) if count.isdigit() else 0
        if last != token:
            n += 1
            self._s.container(_tries(t))[front] = f"{n}|{token}"
            self._s.expire(_tries(t), ttl_s)
        return n

    def _taken(self, t: str, token: str, ttl_s: float) -> Slot:
        s = self._s
        ids = sorted(s.view(_q(t)))
        messages = s.view(_qmsg(t))
        items = [QueuedItem(i, messages.get(i, b"")) for i in ids]
        attempt = self._attempt(t, ids[0] if ids else None, token, ttl_s)
        ledger = None
        fields = s.view(_ledger(t))
        if "rec" in fields:
            receipts = {
                int(name[2:]): value
                for name, value in fields.items()
                if name.startswith("r:") and name[2:].isdigit()
            }
            ledger = Ledger(fields["rec"], receipts)
        return Slot(
            SlotState.RUN,
            len(ids),
            Lock(t, token, self.lock_ttl_s),
            items,
            parse_question(s.get(_question(t))),
            attempt,
            ledger,
            _mode(s.get(_busy(t))),
        )

    # -- the port ---------------------------------------------------------------------------

    async def submit(
        self,
        thread_id: str,
        entry_id: str,
        payload: bytes,
        token: str,
        *,
        busy: BusyMode = BusyMode.QUEUE,
    ) -> Slot:
        s, t, entry = self._s, thread_id, sortable_entry_id(entry_id)
        if entry in s.view(_done(t)):
            return Slot(SlotState.DONE)
        stored = _mode(s.get(_busy(t)))
        if stored is not None:
            s.expire(_busy(t), MODE_TTL_S)
        current = s.get(_lock(t))
        queued = entry in s.view(_q(t))
        if (stored or busy) is BusyMode.REJECT and current and current != token and not queued:
            return Slot(SlotState.BUSY, len(s.view(_q(t))), mode=stored)
        if not queued:
            depth = len(s.view(_q(t)))
            if depth >= self.cap:
                return Slot(SlotState.FULL, depth)
            s.container(_q(t))[entry] = 0.0
            s.container(_qmsg(t))[entry] = payload
        s.expire(_q(t), QUEUE_TTL_S)
        s.expire(_qmsg(t), QUEUE_TTL_S)
        holder = s.get(_lock(t))
        if holder and holder != token:
            return Slot(SlotState.QUEUED, len(s.view(_q(t))), mode=stored)
        if not holder:
            self._take_lock(t, token)
        return self._taken(t, token, QUEUE_TTL_S)

    async def resume(self, thread_id: str, token: str) -> Slot:
        s, t = self._s, thread_id
        if not s.view(_q(t)):
            return Slot(SlotState.EMPTY)
        holder = s.get(_lock(t))
        if holder and holder != token:
            return Slot(SlotState.BUSY, len(s.view(_q(t))))
        if not holder:
            self._take_lock(t, token)
        return self._taken(t, token, QUEUE_TTL_S)

    async def finish(self, lock: Lock, answered: list[str], question_id: str = "") -> Slot:
        s, t, token = self._s, lock.thread_id, lock.token
        now = int(s.clock())
        if s.get(_lock(t)) != token:
            # The lock expired under the caller: its reply was sent, so record the batch
            # answered; leave the lock, the ledger and the rest to whoever holds it now.
            fresh = 0
            for entry in answered:
                if entry not in s.view(_done(t)):
                    fresh += 1
                    self._answered(t, entry, now)
            if fresh:
                s.expire(_done(t), DONE_TTL_S)
                return Slot(SlotState.LOST)
            return Slot(SlotState.RELEASED)
        for entry in answered:
            self._answered(t, entry, now)
        s.delete(_ledger(t))
        done = s.container(_done(t))
        for entry, when in list(done.items()):
            if when <= now - DONE_TTL_S:
                del done[entry]
        s.prune(_done(t))
        s.expire(_done(t), DONE_TTL_S)
        if question_id:
            raw = s.get(_question(t))
            if raw is not None:
                try:
                    doc = json.loads(raw)
                except ValueError:
                    doc = None
                if not isinstance(doc, dict) or doc.get("question_id") == question_id:
                    s.delete(_question(t))
        if not s.view(_q(t)):
            s.delete(_lock(t))
            return Slot(SlotState.RELEASED)
        s.delete(_stop(t))
        s.expire(_lock(t), lock.ttl_s)
        return self._taken(t, token, DONE_TTL_S)

    def _answered(self, t: str, entry: str, now: int) -> None:
        s = self._s
        for key in (_q(t), _qmsg(t), _tries(t)):
            s.container(key).pop(entry, None)
            s.prune(key)
        s.container(_done(t))[entry] = float(now)

    async def record(self, lock: Lock, record: bytes) -> bool:
        s, t = self._s, lock.thread_id
        if s.get(_lock(t)) != lock.token:
            return False
        s.delete(_ledger(t))
        s.container(_ledger(t))["rec"] = bytes(record)
        s.expire(_ledger(t), QUEUE_TTL_S)
        return True

    async def receipt(self, thread_id: str, sent: dict[int, str]) -> None:
        if not sent or "rec" not in self._s.view(_ledger(thread_id)):
            return
        fields = self._s.container(_ledger(thread_id))
        for index, ids in sent.items():
            fields[f"r:{index}"] = ids

    async def absorb(
        self, lock: Lock, after: str, limit: int = QUEUE_CAP
    ) -> list[QueuedItem] | None:
        s, t = self._s, lock.thread_id
        if s.get(_lock(t)) != lock.token:
            return None
        messages = s.view(_qmsg(t))
        later = [i for i in sorted(s.view(_q(t))) if i > after][:limit]
        return [QueuedItem(i, messages.get(i, b"")) for i in later]

    async def set_mode(self, thread_id: str, mode: BusyMode | None) -> None:
        if mode is None:
            self._s.delete(_busy(thread_id))
        else:
            self._s.set(_busy(thread_id), str(mode), MODE_TTL_S)

    async def state(self, thread_id: str) -> ThreadState:
        s, t = self._s, thread_id
        return ThreadState(
            s.exists(_lock(t)),
            len(s.view(_q(t))),
            parse_question(s.get(_question(t))),
            _mode(s.get(_busy(t))),
        )

    async def running(self, thread_id: str) -> bytes | None:
        s, t = self._s, thread_id
        if not s.exists(_lock(t)) or not s.view(_q(t)):
            return None
        payload = s.view(_qmsg(t)).get(min(s.view(_q(t))))
        return None if payload is None else bytes(payload)

    # -- for tests --------------------------------------------------------------------------

    def holder(self, thread_id: str) -> str | None:
        """The token holding the thread's lock now, if any."""
        value = self._s.get(_lock(thread_id))
        return value if isinstance(value, str) else None

    def queued(self, thread_id: str) -> list[str]:
        """The thread's unanswered entry ids, oldest first."""
        return sorted(self._s.view(_q(thread_id)))

    def ledger(self, thread_id: str) -> Ledger | None:
        fields = self._s.view(_ledger(thread_id))
        if "rec" not in fields:
            return None
        receipts = {int(k[2:]): v for k, v in fields.items() if k.startswith("r:")}
        return Ledger(fields["rec"], receipts)


class MemoryQuestions:
    """storage/questions.py's PendingQuestions."""

    def __init__(self, space: Space) -> None:
        self._s = space

    async def put(self, thread_id: str, question: PendingQuestion) -> None:
        ttl_s = question.expires_at - time.time()
        if ttl_s * 1000 >= 1:
            self._s.set(f"qid:{question.question_id}", thread_id, ttl_s)
            self._s.set(_question(thread_id), question.to_json(), ttl_s)
        else:
            self._s.delete(_question(thread_id))

    async def get(self, thread_id: str) -> PendingQuestion | None:
        return parse_question(self._s.get(_question(thread_id)))

    async def thread_of(self, question_id: str) -> str | None:
        value = self._s.get(f"qid:{question_id}")
        return value if isinstance(value, str) else None

    async def set_message(self, thread_id: str, question: PendingQuestion, message_id: str) -> None:
        raw = self._s.get(_question(thread_id))
        if raw is None:
            return
        try:
            stored = PendingQuestion.from_json(raw)
        except (ValueError, KeyError, TypeError):
            return
        if stored.question_id != question.question_id:
            return
        moved = replace(stored, message_id=message_id)
        self._s.set(_question(thread_id), moved.to_json(), keep_ttl=True)


class MemoryOrphans:
    """storage/orphans.py's Orphans: thread → when to check, only ever moved later."""

    def __init__(self, space: Space, *, grace_s: float) -> None:
        self._s = space
        self.grace_s = grace_s

    async def watch(self, thread_id: str, after_s: float | None = None) -> None:
        due = self._s.clock() + (self.grace_s if after_s is None else after_s)
        watched = self._s.container("orphans")
        if thread_id not in watched or due > watched[thread_id]:
            watched[thread_id] = due

    async def due(self, limit: int = 50) -> list[tuple[str, float]]:
        now = self._s.clock()
        rows = sorted((s, t) for t, s in self._s.view("orphans").items() if s <= now)
        return [(t, s) for s, t in rows[:limit]]

    async def forget(self, thread_id: str, seen: float) -> None:
        watched = self._s.container("orphans")
        score = watched.get(thread_id)
        if score is not None and score <= seen:
            del watched[thread_id]
        self._s.prune("orphans")

    def watched(self) -> dict[str, float]:
        """For tests: every watched thread and when it is due."""
        return dict(self._s.view("orphans"))


class MemoryDedupe:
    """storage/dedupe.py's Dedupe: all ids of a message claimed for one entry, or none."""

    def __init__(self, space: Space, *, ttl_s: float = DEDUPE_TTL_S) -> None:
        self._s = space
        self._ttl = ttl_s

    def _keys(self, platform: str, provider_ids: list[str], scope: str) -> list[str]:
        return [f"dedupe:{platform}:{scope}:{pid}" for pid in sorted(set(provider_ids))]

    async def claim(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> Claim:
        keys = self._keys(platform, provider_ids, scope)
        finished = False
        for key in keys:
            value = self._s.get(key)
            if value == f"{owner}:done":
                finished = True
            elif value is not None and value != owner:
                return Claim.DUPLICATE
        if finished:
            return Claim.DONE
        for key in keys:
            self._s.set(key, owner, self._ttl)
        return Claim.NEW

    async def finish(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> None:
        for key in self._keys(platform, provider_ids, scope):
            value = self._s.get(key)
            if value is None or value == owner:
                self._s.set(key, f"{owner}:done", self._ttl)


class MemoryRate:
    """storage/ratelimit.py's RateLimiter: a sliding window per sender, one notice per window."""

    def __init__(self, space: Space, *, limit: int = 20, window_s: float = 60.0) -> None:
        self._s = space
        self.limit = limit
        self.window_s = window_s

    async def hit(
        self, platform: str, sender_id: str, message_id: str | None = None
    ) -> RateDecision:
        now_ms = round(self._s.clock() * 1000)
        window_ms = max(1, round(self.window_s * 1000))
        key = f"rate:{platform}:{sender_id}"
        hits = self._s.container(key)
        for member, score in list(hits.items()):
            if score <= now_ms - window_ms:
                del hits[member]
        member = f"m:{message_id}" if message_id is not None else secrets.token_hex(8)
        if member in hits:
            return RateDecision.ALLOW
        if len(hits) < self.limit:
            hits[member] = now_ms
            self._s.expire(key, window_ms / 1000)
            return RateDecision.ALLOW
        self._s.prune(key)
        notice = f"rate:notice:{platform}:{sender_id}"
        if not self._s.exists(notice):
            self._s.set(notice, "1", window_ms / 1000)
            return RateDecision.NOTIFY
        return RateDecision.SILENT


class MemoryThreads:
    """storage/thread_map.py's ThreadMap: sliding 30-day mappings."""

    def __init__(self, space: Space, *, ttl_s: float = THREAD_TTL_S) -> None:
        self._s = space
        self._ttl = ttl_s

    async def resolve(self, conversation_key: str) -> str:
        key = f"conv:{conversation_key}"
        current = self._s.get(key)
        if current is not None:
            self._s.expire(key, self._ttl)
            return str(current)
        thread_id = uuid.uuid4().hex
        self._s.set(key, thread_id, self._ttl)
        return thread_id

    async def peek(self, conversation_key: str) -> str | None:
        value = self._s.get(f"conv:{conversation_key}")
        return None if value is None else str(value)

    async def touch(self, conversation_key: str) -> str | None:
        """`touch_call`: a started conversation's thread, its TTL refreshed."""
        value = await self.peek(conversation_key)
        if value is not None:
            self._s.expire(f"conv:{conversation_key}", self._ttl)
        return value

    async def start_new(self, conversation_key: str) -> str:
        thread_id = uuid.uuid4().hex
        self._s.set(f"conv:{conversation_key}", thread_id, self._ttl)
        return thread_id

    async def remember_messages(
        self, platform: str, chat_id: str, message_ids: list[str], thread_id: str
    ) -> None:
        """As Redis: the thread keeps its newest REPLIES_PER_THREAD reply ids."""
        kept: list[str] = list(self._s.get(f"replies:{thread_id}") or [])
        for mid in message_ids:
            key = f"msg:{platform}:{chat_id}:{mid}"
            self._s.set(key, thread_id, self._ttl)
            if key not in kept:
                kept.append(key)
        for key in kept[:-REPLIES_PER_THREAD]:
            self._s.delete(key)
        self._s.set(f"replies:{thread_id}", kept[-REPLIES_PER_THREAD:], self._ttl)

    async def thread_for_message(self, platform: str, chat_id: str, message_id: str) -> str | None:
        key = f"msg:{platform}:{chat_id}:{message_id}"
        value = self._s.get(key)
        if value is None:
            return None
        self._s.expire(key, self._ttl)
        return str(value)


class MemoryAdmission:
    """storage/admission.py's Admission: the claim, the flood-limit hit and, when asked, the
    conversation's thread. `asked` lists the conversation each call asked for (None: not)."""

    def __init__(self, dedupe: MemoryDedupe, rate: MemoryRate, threads: MemoryThreads) -> None:
        self._dedupe = dedupe
        self._rate = rate
        self._threads = threads
        self.asked: list[str | None] = []

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
    ) -> Admitted:
        self.asked.append(conversation)
        claim = await self._dedupe.claim(platform, provider_ids, scope=scope, owner=owner)
        rate = await self._rate.hit(platform, sender_id, message_id)
        thread = await self._threads.touch(conversation) if conversation is not None else None
        return Admitted(claim, rate, thread)


class MemoryContext:
    """storage/context.py's ContextRecords: a thread's mark and cached context, and each group's
    observed messages (a sorted set by message id, the newest `keep` kept)."""

    def __init__(
        self,
        space: Space,
        *,
        mark_ttl_s: float = THREAD_TTL_S,
        cache_ttl_s: float = CONTEXT_CACHE_TTL_S,
        observed_ttl_s: float = OBSERVED_TTL_S,
    ) -> None:
        self._s = space
        self._mark_ttl = mark_ttl_s
        self._cache_ttl = cache_ttl_s
        self._observed_ttl = observed_ttl_s

    async def load(
        self,
        thread_id: str,
        *,
        observed: tuple[str, str] | None = None,
        before: str = "",
        limit: int = 0,
    ) -> ContextState:
        mark_raw = self._s.get(f"{{{thread_id}}}:ctx:mark")
        mark = ContextMark.decode(mark_raw) if mark_raw is not None else None
        cached = _cached(self._s.get(f"{{{thread_id}}}:ctx:cache"))
        seen: list[str] = []
        if observed is not None and limit > 0:
            top = message_order(before)[0] - 1 if before else float("inf")
            rows = self._s.view(f"observed:{observed[0]}:{observed[1]}").items()
            newest = sorted(((s, m) for m, s in rows if s <= top), reverse=True)
            seen = [member for _score, member in newest[:limit]]
        messages: list[ContextMessage] = []
        for member in seen:
            try:
                message = ContextMessage.from_dict(json.loads(member))
            except (ValueError, TypeError, KeyError):
                continue
            if all(m.message_id != message.message_id for m in messages):
                messages.append(message)
        return ContextState(mark=mark, cached=cached, observed=tuple(messages))

    async def save(
        self,
        thread_id: str,
        *,
        mark: ContextMark,
        cache: Sequence[ContextMessage] | None = None,
    ) -> None:
        self._s.set(f"{{{thread_id}}}:ctx:mark", mark.encode(), self._mark_ttl)
        if cache is not None:
            doc = json.dumps([m.as_dict() for m in cache], ensure_ascii=False)
            self._s.set(f"{{{thread_id}}}:ctx:cache", doc, self._cache_ttl)

    async def observe(
        self, platform: str, place: str, message: ContextMessage, *, keep: int
    ) -> None:
        score = message_order(message.message_id)[0]
        if keep <= 0 or score < 0:
            return
        key = f"observed:{platform}:{place}"
        members = self._s.container(key)
        members[json.dumps(message.as_dict(), ensure_ascii=False, sort_keys=True)] = score
        for _score, member in sorted((s, m) for m, s in members.items())[:-keep]:
            del members[member]
        self._s.expire(key, self._observed_ttl)


def _cached(raw: str | None) -> tuple[ContextMessage, ...] | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data, list):
            return None
        return tuple(ContextMessage.from_dict(item) for item in data)
    except (ValueError, TypeError, KeyError):
        return None


@dataclass
class _Pending:
    consumer: str
    since: float  # last delivery or touch (the idle clock)
    deliveries: int


@dataclass
class MemoryStream:
    """The inbox stream and its consumer group, shared by every consumer (`MemoryInbox`)."""

    clock: MemoryClock
    max_len: int = INBOX_MAX_LEN
    entries: dict[str, bytes] = field(default_factory=dict)  # id → payload, in append order
    routes: dict[str, str] = field(default_factory=dict)  # id → the chat it was appended for
    pending: dict[str, _Pending] = field(default_factory=dict)
    delivered: str = "0-0"  # the group's last delivered id
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _last: tuple[int, int] = (0, 0)

    def next_id(self) -> str:
        ms, seq = int(self.clock() * 1000), 0
        if ms <= self._last[0]:
            ms, seq = self._last[0], self._last[1] + 1
        self._last = (ms, seq)
        return f"{ms}-{seq}"

    def unread(self) -> list[str]:
        after = sortable_entry_id(self.delivered)
        return [i for i in self.entries if sortable_entry_id(i) > after]


class MemoryInbox:
    """storage/inbox.py's Inbox as one consumer of a `MemoryStream`."""

    def __init__(
        self, stream: MemoryStream, *, consumer: str = "worker", claim_idle_s: float = 30.0
    ) -> None:
        self.stream = stream
        self.consumer = consumer
        self.claim_idle_ms = int(claim_idle_s * 1000)
        self.shards = 1  # one stream: the in-memory twin has no slots to spread over
        self.observed = 0  # `observe` calls: one per housekeeping round of an Intake
        self.reads = 0  # `read` calls begun

    async def ensure_group(self) -> None:
        return None

    async def append(self, payload: bytes, route: str = "") -> str:
        stream = self.stream
        if len(stream.entries) >= stream.max_len:
            raise InboxFull(f"inbox holds {stream.max_len} unfinished messages")
        entry_id = stream.next_id()
        stream.entries[entry_id] = bytes(payload)
        stream.routes[entry_id] = route
        stream.arrived.set()
        return entry_id

    async def chat_waiting(self, entry_id: str, route: str, until_ms: int) -> tuple[int, bool]:
        stream, after = self.stream, sortable_entry_id(entry_id)
        end = sortable_entry_id(f"{until_ms}-99999999")
        waiting = any(
            after < sortable_entry_id(i) <= end and stream.routes.get(i) == route
            for i in stream.entries
        )
        return int(stream.clock() * 1000), waiting

    async def read(self, count: int, block_s: float, shard: int = 0) -> list[Entry]:
        self.reads += 1
        stream = self.stream
        if not stream.unread():
            stream.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stream.arrived.wait(), max(0.001, block_s))
        out: list[Entry] = []
        for entry_id in stream.unread()[:count]:
            stream.delivered = entry_id
            stream.pending[entry_id] = _Pending(self.consumer, stream.clock(), 1)
            out.append(Entry(entry_id, stream.entries[entry_id]))
        return out

    async def reclaim(self, count: int) -> tuple[list[Entry], list[str]]:
        stream, now = self.stream, self.stream.clock()
        claimed: list[Entry] = []
        gone: list[str] = []
        for entry_id in sorted(stream.pending, key=sortable_entry_id):
            if len(claimed) + len(gone) >= count:
                break
            row = stream.pending[entry_id]
            if (now - row.since) * 1000 < self.claim_idle_ms:
                continue
            if entry_id not in stream.entries:
                del stream.pending[entry_id]
                gone.append(entry_id)
                continue
            row.consumer, row.since, row.deliveries = self.consumer, now, row.deliveries + 1
            claimed.append(Entry(entry_id, stream.entries[entry_id], row.deliveries))
        return claimed, gone

    async def touch(self, ids: list[str]) -> None:
        for entry_id in ids:
            row = self.stream.pending.get(entry_id)
            if row is not None and row.consumer == self.consumer:
                row.since = self.stream.clock()

    async def finish(self, ids: list[str]) -> None:
        for entry_id in ids:
            self.stream.pending.pop(entry_id, None)
            self.stream.entries.pop(entry_id, None)
            self.stream.routes.pop(entry_id, None)

    async def backlog(self) -> int:
        return len(self.stream.entries)

    async def observe(self) -> None:
        self.observed += 1


@dataclass
class MemoryPorts:
    """One in-memory Redis's worth of ports, sharing a clock and a keyspace like the real ones
    share a server. `stores()` is what the manager is built from."""

    lock_ttl_s: float = LOCK_TTL_S
    claim_idle_s: float | None = None  # default: the lock TTL, as service/app.py wires it
    orphan_grace_s: float | None = None  # default: 1.2 × the lock TTL, as service/app.py does
    queue_cap: int = QUEUE_CAP
    rate_limit: int = 20
    rate_window_s: float = 60.0
    inbox_max_len: int = INBOX_MAX_LEN
    clock: MemoryClock = field(default_factory=MemoryClock)

    def __post_init__(self) -> None:
        self.space = Space(self.clock)
        self.stream = MemoryStream(self.clock, max_len=self.inbox_max_len)
        self.inbox = self.inbox_for("worker-1")
        self.dedupe = MemoryDedupe(self.space)
        self.threads = MemoryThreads(self.space)
        self.locks = MemoryLocks(self.space)
        self.queue = MemoryQueue(self.space, lock_ttl_s=self.lock_ttl_s, cap=self.queue_cap)
        grace = self.orphan_grace_s if self.orphan_grace_s is not None else self.lock_ttl_s * 1.2
        self.orphans = MemoryOrphans(self.space, grace_s=grace)
        self.questions = MemoryQuestions(self.space)
        self.rate = MemoryRate(self.space, limit=self.rate_limit, window_s=self.rate_window_s)
        self.context = MemoryContext(self.space)
        self.admission = MemoryAdmission(self.dedupe, self.rate, self.threads)

    def inbox_for(self, consumer: str) -> MemoryInbox:
        """Another worker's view of the same inbox."""
        idle = self.claim_idle_s if self.claim_idle_s is not None else self.lock_ttl_s
        return MemoryInbox(self.stream, consumer=consumer, claim_idle_s=idle)

    def stores(self, wrap: Callable[[str, Any], Any] | None = None) -> ManagerStores:
        """The ports as the manager takes them; `wrap(name, port)` may put a proxy around each."""
        ports = {
            "inbox": self.inbox,
            "dedupe": self.dedupe,
            "threads": self.threads,
            "locks": self.locks,
            "queue": self.queue,
            "orphans": self.orphans,
            "questions": self.questions,
            "rate": self.rate,
            "context": self.context,
        }
        if wrap is not None:
            ports = {name: wrap(name, port) for name, port in ports.items()}
        return ManagerStores(**ports)
