"""TurnGate: a turn starts and ends in one script each, so nothing queued is ever stranded."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from storage import (
    Keys,
    PendingMessage,
    PendingQuestion,
    PendingQuestions,
    PendingQueue,
    PendingWarnings,
    ThreadLocks,
    TurnGate,
)
from tests.integration.storage.racing import warm_pool


def _msg(text: str) -> PendingMessage:
    return PendingMessage(sender_id="u1", sender_name="ann", text=text)


async def test_begin_takes_the_lock_orphans_question_and_stale_warnings_in_one_step(
    redis: aioredis.Redis, keys: Keys
) -> None:
    gate, locks = TurnGate(redis, keys=keys), ThreadLocks(redis, keys=keys)
    queue, questions = PendingQueue(redis, keys=keys), PendingQuestions(redis, keys=keys)
    warnings = PendingWarnings(redis, keys=keys)
    await queue.push("t1", _msg("left behind"))
    await questions.put("t1", PendingQuestion(asker_id="u1", text="Which?", options=("a", "b")))
    await warnings.add("t1", "old-run", "you are looping")
    await redis.set(keys.stop("t1"), b"1")
    start = await gate.begin("t1")
    assert start is not None
    assert [m.text for m in start.queued] == ["left behind"]
    assert start.question is not None and start.question.options == ("a", "b")
    assert await locks.is_locked("t1")
    assert await queue.length("t1") == 0 and await questions.get("t1") is None
    assert await warnings.peek("t1", "old-run") == []
    assert not await redis.exists(keys.stop("t1"))


async def test_begin_can_leave_the_question_for_a_button_answer(
    redis: aioredis.Redis, keys: Keys
) -> None:
    gate, questions = TurnGate(redis, keys=keys), PendingQuestions(redis, keys=keys)
    await questions.put("t2", PendingQuestion(asker_id="u1", text="Which?", options=("a",)))
    start = await gate.begin("t2", take_question=False)
    assert start is not None and start.question is None
    assert await questions.get("t2") is not None


async def test_twenty_concurrent_begins_start_exactly_one_turn(
    redis: aioredis.Redis, keys: Keys
) -> None:
    gate = TurnGate(redis, keys=keys)
    await warm_pool(redis, 20)
    starts = await asyncio.gather(*(gate.begin("t3") for _ in range(20)))
    assert sum(s is not None for s in starts) == 1


async def test_end_keeps_the_lock_while_messages_wait_then_releases(
    redis: aioredis.Redis, keys: Keys
) -> None:
    gate, locks, queue = (
        TurnGate(redis, keys=keys),
        ThreadLocks(redis, keys=keys),
        PendingQueue(redis, keys=keys),
    )
    start = await gate.begin("t4")
    assert start is not None
    await queue.push("t4", _msg("while busy"))
    queued, released = await gate.end(start.lock)
    assert [m.text for m in queued] == ["while busy"] and not released
    assert await locks.is_locked("t4")
    queued, released = await gate.end(start.lock)
    assert queued == [] and released
    assert not await locks.is_locked("t4")


async def test_end_never_frees_another_holders_lock(redis: aioredis.Redis, keys: Keys) -> None:
    gate, locks = TurnGate(redis, keys=keys), ThreadLocks(redis, keys=keys, ttl_s=0.2)
    stale = await gate.begin("t5")
    assert stale is not None
    await redis.delete(keys.lock("t5"))  # the stale holder's lock expired...
    assert await locks.acquire("t5") is not None  # ...and someone else took the thread
    _, released = await gate.end(stale.lock)
    assert released and await locks.is_locked("t5")


async def test_end_with_only_corrupt_entries_keeps_the_lock_for_the_caller(
    redis: aioredis.Redis, keys: Keys
) -> None:
    gate, locks = TurnGate(redis, keys=keys), ThreadLocks(redis, keys=keys)
    start = await gate.begin("t6")
    assert start is not None
    await redis.rpush(keys.pending("t6"), b"{not json")
    queued, released = await gate.end(start.lock)
    assert queued == [] and not released
    assert await locks.is_locked("t6")


async def test_a_push_racing_the_end_is_either_drained_or_finds_the_lock_free(
    redis: aioredis.Redis, keys: Keys
) -> None:
    gate, locks, queue = (
        TurnGate(redis, keys=keys),
        ThreadLocks(redis, keys=keys),
        PendingQueue(redis, keys=keys),
    )
    for attempt in range(30):
        thread = f"race{attempt}"
        start = await gate.begin(thread)
        assert start is not None

        async def late_sender(thread: str = thread) -> bool:
            # what the manager does when the lock is taken: push, then try the lock again
            await queue.push(thread, _msg("late"))
            return await locks.acquire(thread) is not None

        (queued, _), got_lock = await asyncio.gather(gate.end(start.lock), late_sender())
        assert bool(queued) or got_lock, "a queued message was stranded"
