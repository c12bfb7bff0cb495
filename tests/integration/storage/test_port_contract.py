"""One contract, two implementations: every scenario here runs on the Redis stores in storage/ and
on their in-memory twins in tests/fakes/memory_ports.py, through the manager's ports only. The
unit tests of the manager trust the twins; this file is why they may.

Time: the twins move their clock; Redis is polled until its TTLs pass (`Backend.once_past`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import pytest
import redis.asyncio as aioredis

from channels.manager.ports import (
    ContextStore,
    DedupeStore,
    InboxStore,
    LockStore,
    OrphanStore,
    QuestionStore,
    QueueStore,
    RateStore,
    ThreadStore,
)
from storage import (
    QUEUE_CAP,
    ContextRecords,
    Dedupe,
    Inbox,
    InboxFull,
    Keys,
    Orphans,
    PendingQuestions,
    RateLimiter,
    ThreadLocks,
    ThreadMap,
    ThreadQueue,
)
from storage.thread_map import REPLIES_PER_THREAD
from switchboard.conversation import ContextMark, ContextMessage, ContextState
from switchboard.state import (
    BusyMode,
    Claim,
    Ledger,
    Lock,
    PendingQuestion,
    RateDecision,
    Slot,
    SlotState,
    StopRequest,
    ThreadState,
    sortable_entry_id,
)
from tests.fakes.memory_ports import MemoryPorts
from tests.support import wait_until

__all__: list[str] = []

R = TypeVar("R")

T = "chat:1"  # a thread id with a colon, as real ones have
LOCK_TTL_S = 0.3
IDLE_S = 0.2
GRACE_S = 0.2
RATE_LIMIT = 3
WINDOW_S = 0.3
MAX_LEN = 3


@dataclass
class Backend:
    name: str
    inbox_for: Callable[[str], InboxStore]
    dedupe: DedupeStore
    threads: ThreadStore
    locks: LockStore
    queue: QueueStore
    orphans: OrphanStore
    questions: QuestionStore
    rate: RateStore
    context: ContextStore
    advance: Callable[[float], None] | None  # the twins' clock; None: real time

    async def once_past(self, seconds: float, check: Callable[[], Awaitable[R | None]]) -> R:
        """What `check` gives once `seconds` have passed: the twins' clock is moved and `check`
        must hold at once; Redis is polled until it holds (within a few seconds)."""
        if self.advance is not None:
            self.advance(seconds + 0.001)
            result = await check()
            assert result, f"{self.name}: not so after {seconds}s"
            return result
        return await wait_until(check, timeout=seconds + 5.0)


@pytest.fixture(params=["memory", "redis"])
def ports(request: pytest.FixtureRequest, redis: aioredis.Redis, keys: Keys) -> Backend:
    if request.param == "memory":
        mem = MemoryPorts(
            lock_ttl_s=LOCK_TTL_S,
            claim_idle_s=IDLE_S,
            orphan_grace_s=GRACE_S,
            rate_limit=RATE_LIMIT,
            rate_window_s=WINDOW_S,
            inbox_max_len=MAX_LEN,
        )
        return Backend(
            "memory",
            mem.inbox_for,
            mem.dedupe,
            mem.threads,
            mem.locks,
            mem.queue,
            mem.orphans,
            mem.questions,
            mem.rate,
            mem.context,
            mem.clock.advance,
        )
    return Backend(
        "redis",
        lambda consumer: Inbox(
            redis, keys=keys, consumer=consumer, claim_idle_s=IDLE_S, max_len=MAX_LEN
        ),
        Dedupe(redis, keys=keys),
        ThreadMap(redis, keys=keys),
        ThreadLocks(redis, keys=keys),
        ThreadQueue(redis, keys=keys, lock_ttl_s=LOCK_TTL_S),
        Orphans(redis, keys=keys, grace_s=GRACE_S),
        PendingQuestions(redis, keys=keys),
        RateLimiter(redis, keys=keys, limit=RATE_LIMIT, window_s=WINDOW_S),
        ContextRecords(redis, keys=keys),
        None,
    )


def _pl(entry_id: str) -> bytes:
    return f"message {entry_id}".encode()


def _id(entry_id: str) -> str:
    return sortable_entry_id(entry_id)


def _ids(slot: Slot) -> list[str]:
    return [item.entry_id for item in slot.items]


async def _submit(ports: Backend, entry_id: str, token: str, **kw: BusyMode) -> Slot:
    return await ports.queue.submit(T, entry_id, _pl(entry_id), token, **kw)


def _taken_by(ports: Backend, token: str) -> Callable[[], Awaitable[Slot | None]]:
    """Resume with `token`: the slot once it runs (the last holder's lock lapsed)."""

    async def take() -> Slot | None:
        slot = await ports.queue.resume(T, token)
        return slot if slot.state is SlotState.RUN else None

    return take


# -- the thread queue -------------------------------------------------------------------------


async def test_submit_runs_on_a_free_thread_and_queues_behind_its_holder(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert (first.state, first.depth, first.attempt, first.ledger) == (SlotState.RUN, 1, 1, None)
    assert first.lock == Lock(T, "tok-a", LOCK_TTL_S)
    assert first.items[0].payload == _pl("1-0") and _ids(first) == [_id("1-0")]
    second = await _submit(ports, "2-0", "tok-b")
    assert (second.state, second.depth, second.lock, second.items) == (
        SlotState.QUEUED,
        2,
        None,
        [],
    )
    assert await ports.queue.state(T) == ThreadState(busy=True, unanswered=2, question=None)


async def test_a_resent_submit_changes_nothing_and_counts_no_attempt(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert await _submit(ports, "1-0", "tok-a") == first
    queued = await _submit(ports, "2-0", "tok-b")
    assert await _submit(ports, "2-0", "tok-b") == queued
    assert (await ports.queue.state(T)).unanswered == 2


async def test_a_full_queue_refuses_and_a_busy_thread_rejects_only_new_entries(
    ports: Backend,
) -> None:
    for n in range(1, QUEUE_CAP + 1):
        await _submit(ports, f"{n}-0", f"tok-{n}")
    full = await _submit(ports, "99-0", "tok-99")
    assert (full.state, full.depth) == (SlotState.FULL, QUEUE_CAP)
    busy = await _submit(ports, "98-0", "tok-98", busy=BusyMode.REJECT)
    assert (busy.state, busy.depth) == (SlotState.BUSY, QUEUE_CAP)
    again = await _submit(ports, "2-0", "tok-2", busy=BusyMode.REJECT)  # already queued
    assert again.state is SlotState.QUEUED


async def test_a_conversation_mode_overrides_the_default_and_the_slot_names_it(
    ports: Backend,
) -> None:
    await _submit(ports, "1-0", "tok-a", busy=BusyMode.REJECT)
    await ports.queue.set_mode(T, BusyMode.QUEUE)
    queued = await _submit(ports, "2-0", "tok-b", busy=BusyMode.REJECT)
    assert (queued.state, queued.mode) == (SlotState.QUEUED, BusyMode.QUEUE)
    await ports.queue.set_mode(T, BusyMode.REJECT)
    refused = await _submit(ports, "3-0", "tok-c", busy=BusyMode.STEER)
    assert (refused.state, refused.mode) == (SlotState.BUSY, BusyMode.REJECT)
    assert (await ports.queue.state(T)).mode is BusyMode.REJECT
    await ports.queue.set_mode(T, None)
    assert (await _submit(ports, "4-0", "tok-d", busy=BusyMode.STEER)).mode is None
    assert (await ports.queue.state(T)).mode is None


async def test_absorb_hands_the_holder_what_queued_behind_its_batch_and_nobody_else(
    ports: Backend,
) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert first.lock is not None
    assert await ports.queue.absorb(first.lock, _id("1-0")) == []
    await _submit(ports, "2-0", "tok-b")
    await _submit(ports, "3-0", "tok-c")
    absorbed = await ports.queue.absorb(first.lock, _id("1-0"))
    assert absorbed is not None
    assert [i.entry_id for i in absorbed] == [_id("2-0"), _id("3-0")]
    assert absorbed[1].payload == _pl("3-0")
    later = await ports.queue.absorb(first.lock, _id("2-0"), limit=5)
    assert [i.entry_id for i in later or []] == [_id("3-0")]
    assert await ports.queue.absorb(Lock(T, "tok-x", LOCK_TTL_S), _id("1-0")) is None
    # absorbed entries stay queued until the batch that took them in is finished
    assert (await ports.queue.state(T)).unanswered == 3
    done = await ports.queue.finish(first.lock, [_id("1-0"), _id("2-0"), _id("3-0")])
    assert done.state is SlotState.RELEASED


async def test_an_interrupt_reaches_the_holder_and_never_hides_a_stop(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert first.lock is not None
    assert await ports.locks.request_stop(T, interrupt=True)
    assert await ports.locks.keep(first.lock) == (True, StopRequest.INTERRUPT)
    assert await ports.locks.keep(first.lock) == (True, StopRequest.NONE)
    assert await ports.locks.request_stop(T)
    assert await ports.locks.request_stop(T, interrupt=True)
    assert await ports.locks.keep(first.lock) == (True, StopRequest.STOP)


async def test_a_request_not_taken_before_the_batch_ends_does_not_reach_the_next_batch(
    ports: Backend,
) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    await _submit(ports, "2-0", "tok-b")
    assert first.lock is not None
    assert await ports.locks.request_stop(T, interrupt=True)
    nxt = await ports.queue.finish(first.lock, [_id("1-0")])
    assert nxt.state is SlotState.RUN and nxt.lock is not None
    assert await ports.locks.keep(nxt.lock) == (True, StopRequest.NONE)


async def test_finish_hands_over_what_queued_meanwhile_then_releases(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    await _submit(ports, "2-0", "tok-b")
    await _submit(ports, "3-0", "tok-c")
    assert first.lock is not None
    nxt = await ports.queue.finish(first.lock, [_id("1-0")])
    assert (nxt.state, nxt.depth, _ids(nxt), nxt.attempt) == (
        SlotState.RUN,
        2,
        [_id("2-0"), _id("3-0")],
        1,
    )
    assert nxt.lock == first.lock
    assert nxt.items[1].payload == _pl("3-0")
    assert nxt.lock is not None
    done = await ports.queue.finish(nxt.lock, [_id("2-0"), _id("3-0")])
    assert done.state is SlotState.RELEASED
    assert await ports.queue.state(T) == ThreadState(busy=False, unanswered=0, question=None)
    assert (await _submit(ports, "2-0", "tok-d")).state is SlotState.DONE  # a redelivery


async def test_a_finish_after_the_lock_lapsed_records_the_batch_and_leaves_the_new_holder_be(
    ports: Backend,
) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    await _submit(ports, "2-0", "tok-b")
    assert first.lock is not None
    taken = await ports.once_past(LOCK_TTL_S, _taken_by(ports, "tok-c"))
    assert _ids(taken) == [_id("1-0"), _id("2-0")]
    assert (await ports.queue.finish(first.lock, [_id("1-0")])).state is SlotState.LOST
    assert (await ports.queue.finish(first.lock, [_id("1-0")])).state is SlotState.RELEASED
    assert await ports.queue.state(T) == ThreadState(busy=True, unanswered=1, question=None)
    assert taken.lock is not None
    assert await ports.locks.keep(taken.lock) == (True, False)
    assert not await ports.locks.release(first.lock)


async def test_attempts_count_once_per_token_and_finish_forgets_them(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert first.lock is not None and first.attempt == 1
    assert await ports.locks.release(first.lock)  # handed back
    second = await ports.queue.resume(T, "tok-b")
    assert (second.state, second.attempt) == (SlotState.RUN, 2)
    assert (await ports.queue.resume(T, "tok-b")).attempt == 2  # a resend
    assert second.lock is not None and await ports.locks.release(second.lock)
    third = await ports.queue.resume(T, "tok-c")
    assert third.attempt == 3 and third.lock is not None
    await _submit(ports, "2-0", "tok-x")
    nxt = await ports.queue.finish(third.lock, [_id("1-0")])
    assert (nxt.state, nxt.attempt) == (SlotState.RUN, 1)
    assert await ports.locks.release(third.lock)
    assert (await ports.queue.resume(T, "tok-d")).attempt == 2


async def test_the_ledger_is_fenced_comes_back_with_its_receipts_and_goes_with_the_batch(
    ports: Backend,
) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert first.lock is not None
    assert not await ports.queue.record(Lock(T, "tok-z", LOCK_TTL_S), b"not ours")
    assert await ports.queue.record(first.lock, b"rec-1")
    await ports.queue.receipt(T, {0: "c|101"})
    await ports.queue.receipt(T, {1: "c|102,103"})
    assert await ports.locks.release(first.lock)
    again = await ports.queue.resume(T, "tok-b")
    assert again.ledger == Ledger(b"rec-1", {0: "c|101", 1: "c|102,103"})
    assert again.lock is not None
    assert await ports.queue.record(again.lock, b"rec-2")  # a new answer replaces the old
    assert await ports.locks.release(again.lock)
    third = await ports.queue.resume(T, "tok-c")
    assert third.ledger == Ledger(b"rec-2", {})
    assert third.lock is not None
    assert (await ports.queue.finish(third.lock, [_id("1-0")])).state is SlotState.RELEASED
    await ports.queue.receipt(T, {2: "c|104"})  # late: a finished ledger is not brought back
    assert (await _submit(ports, "2-0", "tok-d")).ledger is None


async def test_resume_takes_only_a_nonempty_queue_without_a_live_holder(ports: Backend) -> None:
    assert (await ports.queue.resume(T, "tok-a")).state is SlotState.EMPTY
    first = await _submit(ports, "1-0", "tok-a")
    busy = await ports.queue.resume(T, "tok-b")
    assert (busy.state, busy.depth, busy.lock) == (SlotState.BUSY, 1, None)
    assert (await ports.queue.resume(T, "tok-a")).lock == first.lock  # the holder's own resend
    taken = await ports.once_past(LOCK_TTL_S, _taken_by(ports, "tok-b"))
    assert taken.attempt == 2 and taken.lock == Lock(T, "tok-b", LOCK_TTL_S)


async def test_finish_drops_the_question_its_batch_answered_and_no_other(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    await _submit(ports, "2-0", "tok-b")
    question = PendingQuestion(asker_id="u1", text="Which?", options=("a", "b"))
    await ports.questions.put(T, question)
    assert first.lock is not None
    nxt = await ports.queue.finish(first.lock, [_id("1-0")], "another-question")
    assert nxt.question == question
    assert await ports.queue.state(T) == ThreadState(busy=True, unanswered=1, question=question)
    assert nxt.lock is not None
    await ports.queue.finish(nxt.lock, [_id("2-0")], question.question_id)
    assert await ports.questions.get(T) is None


# -- the lock and /stop -----------------------------------------------------------------------


async def test_keep_takes_a_stop_once_and_only_for_the_holder(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert first.lock is not None
    assert await ports.locks.keep(first.lock) == (True, False)
    assert await ports.locks.request_stop(T)
    stale = Lock(T, "tok-z", LOCK_TTL_S)
    assert await ports.locks.keep(stale) == (False, False)  # not the holder: leaves the stop
    assert await ports.locks.keep(first.lock) == (True, True)
    assert await ports.locks.keep(first.lock) == (True, False)
    assert not await ports.locks.release(stale)
    assert await ports.locks.release(first.lock)
    assert not await ports.locks.request_stop(T)  # nothing runs


async def test_taking_the_lock_clears_a_stop_meant_for_the_last_holder(ports: Backend) -> None:
    first = await _submit(ports, "1-0", "tok-a")
    assert first.lock is not None
    assert await ports.locks.request_stop(T)
    assert await ports.locks.release(first.lock)
    second = await ports.queue.resume(T, "tok-b")
    assert second.lock is not None
    assert await ports.locks.keep(second.lock) == (True, False)


# -- the inbox --------------------------------------------------------------------------------


async def test_an_entry_is_read_once_reclaimed_once_idle_and_gone_once_finished(
    ports: Backend,
) -> None:
    a, b = ports.inbox_for("a"), ports.inbox_for("b")
    await a.ensure_group()
    await b.ensure_group()
    first, second = await a.append(b"1"), await a.append(b"2")
    assert _id(first) < _id(second)
    got = await a.read(1, 0.05)
    assert [(e.entry_id, e.payload, e.deliveries) for e in got] == [(first, b"1", 1)]
    assert [e.entry_id for e in await b.read(10, 0.05)] == [second]
    assert await a.read(10, 0.05) == []
    assert await a.backlog() == 2
    await a.finish([first])
    assert await b.backlog() == 1

    async def reclaimed() -> list[tuple[str, bytes, int]]:
        entries, _gone = await a.reclaim(10)
        return [(e.entry_id, e.payload, e.deliveries) for e in entries]

    assert await ports.once_past(IDLE_S, reclaimed) == [(second, b"2", 2)]
    await a.finish([second])
    assert await a.backlog() == 0


async def test_a_chat_is_waiting_while_a_later_message_of_it_in_the_window_is_unfinished(
    ports: Backend,
) -> None:
    inbox = ports.inbox_for("a")
    await inbox.ensure_group()
    first = await inbox.append(b"1", route="tg:1")
    await inbox.append(b"2", route="tg:2")
    third = await inbox.append(b"3", route="tg:1")
    end = _ms(third) + 1000
    now, waiting = await inbox.chat_waiting(first, "tg:1", end)
    assert waiting and now >= _ms(first)
    assert (await inbox.chat_waiting(first, "tg:1", _ms(first) - 1))[1] is False  # before it
    assert (await inbox.chat_waiting(third, "tg:1", end))[1] is False  # nothing after it
    assert (await inbox.chat_waiting(first, "tg:3", end))[1] is False  # another chat
    await inbox.finish([third])  # answered, or handed to its thread's queue
    assert (await inbox.chat_waiting(first, "tg:1", end))[1] is False


def _ms(entry_id: str) -> int:
    return int(entry_id.partition("-")[0])


async def test_a_full_inbox_refuses_an_append(ports: Backend) -> None:
    inbox = ports.inbox_for("a")
    await inbox.ensure_group()
    for n in range(MAX_LEN):
        await inbox.append(str(n).encode())
    with pytest.raises(InboxFull):
        await inbox.append(b"one too many")


# -- dedupe, orphans, questions, rate, threads, context ------------------------------------------------


async def test_a_message_is_claimed_for_one_entry_all_ids_or_none(ports: Backend) -> None:
    d = ports.dedupe
    assert await d.claim("slack", ["a", "b"], scope="C", owner="1-0") is Claim.NEW
    assert await d.claim("slack", ["b"], scope="C", owner="2-0") is Claim.DUPLICATE
    assert await d.claim("slack", ["b"], scope="D", owner="2-0") is Claim.NEW  # another chat
    assert await d.claim("slack", ["a", "b"], scope="C", owner="1-0") is Claim.NEW  # reclaimed
    assert await d.claim("slack", ["b", "x"], scope="C", owner="3-0") is Claim.DUPLICATE
    assert await d.claim("slack", ["x"], scope="C", owner="4-0") is Claim.NEW  # x was not taken
    await d.finish("slack", ["a", "b"], scope="C", owner="1-0")
    assert await d.claim("slack", ["a", "b"], scope="C", owner="1-0") is Claim.DONE
    assert await d.claim("slack", ["a"], scope="C", owner="5-0") is Claim.DUPLICATE
    await d.finish("slack", ["x"], scope="C", owner="9-0")  # not its claim: left alone
    assert await d.claim("slack", ["x"], scope="C", owner="4-0") is Claim.NEW


async def test_a_watched_thread_is_due_after_its_grace_and_forgotten_unless_rearmed(
    ports: Backend,
) -> None:
    o = ports.orphans
    await o.watch(T)
    assert T not in dict(await o.due())

    async def due() -> float | None:
        return dict(await o.due()).get(T)

    seen = await ports.once_past(GRACE_S, due)
    await o.watch(T, after_s=60.0)  # a backoff: re-armed for later
    await o.forget(T, seen)
    assert T not in dict(await o.due())
    await o.watch(T, after_s=0.0)  # never moved earlier than it is
    assert T not in dict(await o.due())
    await o.watch("other", after_s=0.0)
    seen_other = await ports.once_past(0.0, lambda: _due_of(o, "other"))
    await o.forget("other", seen_other)
    assert "other" not in dict(await o.due())


async def _due_of(orphans: OrphanStore, thread_id: str) -> float | None:
    return dict(await orphans.due()).get(thread_id)


async def test_a_question_is_found_by_thread_and_id_and_remembers_its_message(
    ports: Backend,
) -> None:
    q = ports.questions
    question = PendingQuestion(asker_id="u1", text="Which?", options=("a", "b"))
    await q.put(T, question)
    assert await q.get(T) == question
    assert await q.thread_of(question.question_id) == T
    assert await q.thread_of("nope") is None
    other = PendingQuestion(asker_id="u1", text="Other?")
    await q.set_message(T, other, "m9")  # not the open question: ignored
    await q.set_message(T, question, "m1")
    stored = await q.get(T)
    assert stored is not None and stored.message_id == "m1"
    await q.put(T, PendingQuestion(asker_id="u1", text="Old", expires_at=time.time() - 1))
    assert await q.get(T) is None


async def test_a_sender_over_the_limit_is_told_once_per_window(ports: Backend) -> None:
    hits = [await ports.rate.hit("tg", "u1") for _ in range(RATE_LIMIT + 2)]
    assert hits == [RateDecision.ALLOW] * RATE_LIMIT + [RateDecision.NOTIFY, RateDecision.SILENT]
    assert await ports.rate.hit("tg", "u2") is RateDecision.ALLOW

    async def allowed() -> bool:
        return await ports.rate.hit("tg", "u1") is RateDecision.ALLOW

    assert await ports.once_past(WINDOW_S, allowed)


async def test_a_conversation_keeps_its_thread_until_new_and_replies_find_it(
    ports: Backend,
) -> None:
    t = ports.threads
    assert await t.peek("slack:T:C") is None
    first = await t.resolve("slack:T:C")
    assert await t.resolve("slack:T:C") == first == await t.peek("slack:T:C")
    fresh = await t.start_new("slack:T:C")
    assert fresh != first and await t.resolve("slack:T:C") == fresh
    await t.remember_messages("slack", "C", ["m1", "m2"], fresh)
    assert await t.thread_for_message("slack", "C", "m2") == fresh
    assert await t.thread_for_message("slack", "C", "m3") is None
    assert await t.thread_for_message("slack", "D", "m1") is None


async def test_a_thread_keeps_only_its_newest_reply_ids(ports: Backend) -> None:
    t = ports.threads
    thread = await t.resolve("tg:-100:1")
    other = await t.resolve("tg:-100:2")
    await t.remember_messages("telegram", "-100", ["o1"], other)
    for n in range(REPLIES_PER_THREAD + 3):
        await t.remember_messages("telegram", "-100", [f"m{n}"], thread)

    assert [await t.thread_for_message("telegram", "-100", f"m{n}") for n in range(3)] == [None] * 3
    assert await t.thread_for_message("telegram", "-100", "m3") == thread
    assert await t.thread_for_message("telegram", "-100", f"m{REPLIES_PER_THREAD + 2}") == thread
    assert await t.thread_for_message("telegram", "-100", "o1") == other


def _said(message_id: str, text: str = "hi") -> ContextMessage:
    return ContextMessage(message_id, "Ann", 1_700_000_000.0, text)


async def test_a_thread_keeps_its_context_mark_and_cache_and_an_empty_cache_counts(
    ports: Backend,
) -> None:
    c = ports.context
    assert await c.load(T) == ContextState()
    assert await c.load(T, observed=("telegram", "-100"), before="9", limit=5) == ContextState()
    cache = [_said("1", "Should we ship?"), _said("2", "Monday.")]
    await c.save(T, mark=ContextMark(at="3"), cache=cache)
    assert await c.load(T) == ContextState(mark=ContextMark(at="3"), cached=tuple(cache))
    await c.save(T, mark=ContextMark(at="7", previous="3"))  # the mark alone: cache kept
    assert (await c.load(T)).cached == tuple(cache)
    await c.save(T, mark=ContextMark(at="8", previous="7"), cache=[])
    assert await c.load(T) == ContextState(mark=ContextMark(at="8", previous="7"), cached=())


async def test_a_group_keeps_its_newest_observed_messages_once_each(ports: Backend) -> None:
    c = ports.context
    for n in range(1, 6):
        await c.observe("telegram", "-100", _said(str(n), f"text {n}"), keep=3)
    await c.observe("telegram", "-100", _said("5", "edited on redelivery"), keep=4)
    await c.observe("telegram", "-100", _said("not-a-number"), keep=3)  # no order: not kept
    await c.observe("telegram", "-100", _said("9"), keep=0)  # observing is off
    await c.observe("telegram", "-200", _said("4"), keep=3)  # another group
    state = await c.load(T, observed=("telegram", "-100"), limit=10)
    assert [m.message_id for m in state.observed] == ["5", "4", "3"]
    assert state.observed[0].text == "text 5"  # of two records of one id, the same one wins
    older = await c.load(T, observed=("telegram", "-100"), before="5", limit=1)
    assert [m.message_id for m in older.observed] == ["4"]
    assert (await c.load(T, observed=("telegram", "-100"), limit=0)).observed == ()
