"""Thread locks against a real server: mutual exclusion across clients, expiry, tokens, stop flags.

Locks are taken by `ThreadQueue.submit`/`resume` (with the thread's queue); `ThreadLocks` keeps,
extends and releases them and carries `/stop` requests to the holder.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from storage import Keys, Lock, ThreadLocks, connect
from storage.thread_queue import SlotState, ThreadQueue
from tests.integration.storage.racing import warm_pool
from tests.support import wait_until

__all__: list[str] = []

_entry_ids = itertools.count(1)


@pytest.fixture
async def second_client(redis_url: str, redis_cluster: bool) -> AsyncIterator[aioredis.Redis]:
    """Another connection pool, standing in for a second worker process."""
    client = connect(redis_url, cluster=redis_cluster)
    try:
        yield client
    finally:
        await client.aclose()


async def take(
    queue: ThreadQueue, thread_id: str, token: str | None = None, entry_id: str | None = None
) -> Lock | None:
    """Take the thread's lock the way a worker does: submit a (dummy) message with our token.
    None when another holder has it (the message is then queued for that holder). Polling
    callers pass a fixed `entry_id`: a resubmit is idempotent, so the queue does not fill up."""
    entry_id = entry_id or f"{next(_entry_ids)}-0"
    slot = await queue.submit(thread_id, entry_id, b"{}", token or uuid.uuid4().hex)
    return slot.lock if slot.state is SlotState.RUN else None


async def test_two_clients_never_hold_a_thread_lock_at_once(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    clients = [redis, second_client]
    queues = [ThreadQueue(c, keys=keys, cap=1000) for c in clients]  # room for all 300
    locks = [ThreadLocks(c, keys=keys) for c in clients]
    await warm_pool(redis, 10)
    await warm_pool(second_client, 10)
    holders = 0
    most_holders = 0
    runs = 0
    submitted: list[str] = []
    answered: list[str] = []

    async def contender(i: int) -> None:
        nonlocal holders, most_holders, runs
        queue, lock_ops = queues[i % 2], locks[i % 2]
        for _ in range(15):
            entry_id = f"{next(_entry_ids)}-0"
            submitted.append(entry_id)
            slot = await queue.submit("t1", entry_id, b"{}", uuid.uuid4().hex)
            while slot.state is SlotState.RUN:
                assert slot.lock is not None
                holders += 1
                runs += 1
                most_holders = max(most_holders, holders)
                # Hold across round trips so the other contenders get to try meanwhile.
                assert await lock_ops.keep(slot.lock) == (True, False)
                assert await clients[i % 2].exists(keys.lock("t1")) == 1
                holders -= 1
                batch = [item.entry_id for item in slot.items]
                answered.extend(batch)
                slot = await queue.finish(slot.lock, batch)
            assert slot.state in (SlotState.QUEUED, SlotState.RELEASED)

    await asyncio.gather(*(contender(i) for i in range(20)))
    assert most_holders == 1
    assert runs >= 2
    # every message was answered exactly once and nothing was left behind without a holder
    assert len(answered) == len(set(answered)) == len(submitted) == 300
    assert await redis.exists(keys.lock("t1")) == 0
    assert await redis.zcard(keys.thread("t1", "q")) == 0


async def test_a_holder_that_stops_extending_loses_the_lock_after_its_ttl(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    # long enough that a slow CI host (a cluster round trip each) cannot let it lapse between the
    # two takes, short enough to wait out
    first_queue = ThreadQueue(redis, keys=keys, lock_ttl_s=1.5)
    second_queue = ThreadQueue(second_client, keys=keys, lock_ttl_s=1.5)
    first = ThreadLocks(redis, keys=keys)
    lock = await take(first_queue, "t1", "tok-a")
    assert lock is not None
    assert await take(second_queue, "t1", "tok-b", "999-0") is None
    assert 0 < await redis.pttl(keys.lock("t1")) <= 1500

    taken = await wait_until(lambda: take(second_queue, "t1", "tok-b", "999-0"), timeout=5.0)
    assert taken.token == "tok-b"
    assert await first.keep(lock) == (False, False)
    assert await redis.get(keys.lock("t1")) == b"tok-b"


async def test_keep_extends_the_lock_and_reports_a_pending_stop_exactly_once(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=20.0)
    locks = ThreadLocks(redis, keys=keys)
    lock = await take(queue, "t1")
    assert lock is not None
    await redis.pexpire(keys.lock("t1"), 100)
    assert await locks.keep(lock) == (True, False)
    assert 19_000 < await redis.pttl(keys.lock("t1")) <= 20_000

    assert await locks.request_stop("t1") is True
    assert await locks.keep(lock) == (True, True)
    assert await locks.keep(lock) == (True, False)
    # taken, not deleted: the flag now names the beat that took it (a resend of that beat sees
    # the stop again; no later beat does)
    assert (await redis.get(keys.stop("t1")) or b"").startswith(b"beat:")


async def test_a_stale_holders_keep_does_not_swallow_the_new_holders_stop(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    # The old holder's keeper beats once more before it notices the lock is gone; a /stop meant
    # for the new holder's turn must still reach the new holder.
    first_queue = ThreadQueue(redis, keys=keys, lock_ttl_s=0.3)
    second_queue = ThreadQueue(second_client, keys=keys, lock_ttl_s=20.0)
    first = ThreadLocks(redis, keys=keys)
    second = ThreadLocks(second_client, keys=keys)
    stale = await take(first_queue, "t1", "tok-a")
    assert stale is not None
    current = await wait_until(lambda: take(second_queue, "t1", "tok-b", "999-0"), timeout=5.0)

    assert await second.request_stop("t1") is True
    assert await first.keep(stale) == (False, False)
    assert await second.keep(current) == (True, True)


async def test_stale_token_can_neither_extend_nor_release_the_new_holders_lock(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    first_queue = ThreadQueue(redis, keys=keys, lock_ttl_s=0.3)
    second_queue = ThreadQueue(second_client, keys=keys, lock_ttl_s=20.0)
    first = ThreadLocks(redis, keys=keys)
    second = ThreadLocks(second_client, keys=keys)
    stale = await take(first_queue, "t1", "tok-a")
    assert stale is not None
    current = await wait_until(lambda: take(second_queue, "t1", "tok-b", "999-0"), timeout=5.0)
    await redis.pexpire(keys.lock("t1"), 10_000)

    assert await first.keep(stale) == (False, False)
    assert await first.release(stale) is False
    assert await first.release(Lock("t1", "forged-token", 30.0)) is False

    assert await redis.get(keys.lock("t1")) == current.token.encode()
    assert await redis.pttl(keys.lock("t1")) <= 10_000  # the stale extends did not push it out
    assert await second.keep(current) == (True, False)
    assert await second.release(current) is True
    assert await redis.exists(keys.lock("t1")) == 0


async def test_release_frees_the_lock_for_the_next_holder(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    first_queue = ThreadQueue(redis, keys=keys)
    second_queue = ThreadQueue(second_client, keys=keys)
    locks = ThreadLocks(redis, keys=keys)
    lock = await take(first_queue, "t1", "tok-a")
    assert lock is not None
    assert await redis.exists(keys.lock("t1")) == 1
    assert await locks.release(lock) is True
    assert await locks.release(lock) is False
    assert await redis.exists(keys.lock("t1")) == 0
    taken = await take(second_queue, "t1", "tok-b")
    assert taken is not None and taken.token == "tok-b"


async def test_locks_of_different_threads_are_independent(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    assert await take(queue, "t1") is not None
    assert await take(queue, "t2") is not None


async def test_a_sub_millisecond_ttl_still_takes_the_lock_and_expires(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=0.0004)
    assert await take(queue, "t1") is not None
    await wait_until(lambda: take(queue, "t1", "tok-b", "999-0"), timeout=5.0)


async def test_request_stop_is_false_when_nothing_runs_and_true_when_a_lock_is_held(
    redis: aioredis.Redis, keys: Keys
) -> None:
    locks = ThreadLocks(redis, keys=keys)
    assert await locks.request_stop("t1") is False
    assert await redis.exists(keys.stop("t1")) == 0

    assert await take(ThreadQueue(redis, keys=keys), "t1") is not None
    assert await locks.request_stop("t1") is True
    assert 0 < await redis.ttl(keys.stop("t1")) <= 600
    assert await locks.request_stop("t2") is False  # another thread's lock does not count


async def test_a_stop_is_seen_by_exactly_one_of_concurrent_keeps(
    redis: aioredis.Redis, keys: Keys
) -> None:
    locks = ThreadLocks(redis, keys=keys)
    lock = await take(ThreadQueue(redis, keys=keys), "t1")
    assert lock is not None
    assert await locks.request_stop("t1") is True
    await warm_pool(redis, 20)
    seen = await asyncio.gather(*(locks.keep(lock) for _ in range(20)))
    assert seen.count((True, True)) == 1 and seen.count((True, False)) == 19
    assert await locks.keep(lock) == (True, False)


async def test_taking_a_freed_lock_clears_a_stop_the_last_turn_never_saw(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    locks = ThreadLocks(redis, keys=keys)
    old = await take(queue, "t1")
    assert old is not None
    assert await locks.request_stop("t1") is True
    assert await locks.release(old) is True  # the turn ended before it looked at the flag

    new = await take(queue, "t1")
    assert new is not None
    assert await locks.keep(new) == (True, False)


async def test_a_refused_take_leaves_the_holders_stop_flag(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    holder = ThreadLocks(redis, keys=keys)
    other = ThreadLocks(second_client, keys=keys)
    lock = await take(ThreadQueue(redis, keys=keys), "t1", "tok-a")
    assert lock is not None
    assert await other.request_stop("t1") is True
    assert await take(ThreadQueue(second_client, keys=keys), "t1", "tok-b") is None
    assert await holder.keep(lock) == (True, True)
