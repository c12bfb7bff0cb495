"""Attempts and the reply ledger against a real server: each take of a batch counts once per
holder, a recorded answer comes back to whoever takes the batch next, with its receipts, and
finishing the batch forgets both."""

from __future__ import annotations

import redis.asyncio as aioredis

from storage import Keys, Ledger
from storage.thread_queue import Slot, SlotState, ThreadQueue

__all__: list[str] = []

T = "chat:9"


async def _submit(queue: ThreadQueue, entry_id: str, token: str) -> Slot:
    return await queue.submit(T, entry_id, f"m {entry_id}".encode(), token)


async def test_each_take_of_a_batch_counts_one_attempt_and_a_resend_counts_none(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=5.0)
    first = await _submit(queue, "1-0", "tok-a")
    assert (first.state, first.attempt) == (SlotState.RUN, 1)
    assert (await _submit(queue, "1-0", "tok-a")).attempt == 1  # a resend of the same call
    await redis.delete(keys.lock(T))  # the holder died
    again = await queue.resume(T, "tok-b")
    assert (again.state, again.attempt) == (SlotState.RUN, 2)
    assert (await queue.resume(T, "tok-b")).attempt == 2


async def test_finish_forgets_the_attempts_of_what_it_answered_and_counts_the_next_batch(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=5.0)
    first = await _submit(queue, "1-0", "tok-a")
    await _submit(queue, "2-0", "tok-b")
    assert first.lock is not None
    nxt = await queue.finish(first.lock, [first.items[0].entry_id])
    assert (nxt.state, nxt.attempt) == (SlotState.RUN, 1)
    answered = first.items[0].entry_id
    assert not await redis.hexists(keys.thread(T, "tries"), answered)


async def test_a_recorded_answer_and_its_receipts_come_back_to_the_next_holder(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=5.0)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None and first.ledger is None
    assert await queue.record(first.lock, b'{"pieces": 3}')
    await queue.receipt(T, {0: "101"})
    await queue.receipt(T, {1: "102,103"})
    await redis.delete(keys.lock(T))  # crashed before the third piece
    again = await queue.resume(T, "tok-b")
    assert again.ledger == Ledger(b'{"pieces": 3}', {0: "101", 1: "102,103"})


async def test_only_the_lock_holder_can_record_an_answer(redis: aioredis.Redis, keys: Keys) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=5.0)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await redis.delete(keys.lock(T))
    second = await queue.resume(T, "tok-b")
    assert not await queue.record(first.lock, b"stale")
    assert second.lock is not None and await queue.record(second.lock, b"fresh")
    assert await redis.hget(keys.thread(T, "ledger"), "rec") == b"fresh"


async def test_finish_deletes_the_ledger_and_a_late_receipt_does_not_bring_it_back(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=5.0)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    assert await queue.record(first.lock, b"answer")
    done = await queue.finish(first.lock, [first.items[0].entry_id])
    assert done.state is SlotState.RELEASED
    await queue.receipt(T, {0: "1"})
    assert not await redis.exists(keys.thread(T, "ledger"))
