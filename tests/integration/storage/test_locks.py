"""Thread locks against a real server: mutual exclusion across clients, expiry, tokens, stop flags."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from storage import Keys, Lock, ThreadLocks, connect
from tests.integration.storage.racing import warm_pool
from tests.support import wait_until

__all__: list[str] = []


@pytest.fixture
async def second_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """Another connection pool, standing in for a second worker process."""
    client = connect(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


async def test_two_clients_never_hold_a_thread_lock_at_once(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    workers = [ThreadLocks(redis, keys=keys), ThreadLocks(second_client, keys=keys)]
    await warm_pool(redis, 10)
    await warm_pool(second_client, 10)
    holders = 0
    most_holders = 0
    acquired = 0

    async def contender(i: int) -> None:
        nonlocal holders, most_holders, acquired
        locks = workers[i % 2]
        for _ in range(15):
            lock = await locks.acquire("t1")
            if lock is None:
                await asyncio.sleep(0)
                continue
            holders += 1
            acquired += 1
            most_holders = max(most_holders, holders)
            # Hold across a round trip so the other contenders get to try meanwhile.
            assert await locks.extend(lock) is True
            holders -= 1
            assert await locks.release(lock) is True

    await asyncio.gather(*(contender(i) for i in range(20)))
    assert most_holders == 1
    assert acquired >= 2
    assert await workers[0].is_locked("t1") is False


async def test_a_holder_that_stops_extending_loses_the_lock_after_its_ttl(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    first = ThreadLocks(redis, keys=keys, ttl_s=0.3)
    second = ThreadLocks(second_client, keys=keys, ttl_s=0.3)
    lock = await first.acquire("t1")
    assert lock is not None
    assert await second.acquire("t1") is None
    assert 0 < await redis.pttl(keys.lock("t1")) <= 300

    taken = await wait_until(lambda: second.acquire("t1"), timeout=5.0)
    assert isinstance(taken, Lock)
    assert await first.extend(lock) is False


async def test_extend_pushes_the_expiry_out_again(redis: aioredis.Redis, keys: Keys) -> None:
    locks = ThreadLocks(redis, keys=keys, ttl_s=20.0)
    lock = await locks.acquire("t1")
    assert lock is not None
    await redis.pexpire(keys.lock("t1"), 100)
    assert await locks.extend(lock) is True
    assert 19_000 < await redis.pttl(keys.lock("t1")) <= 20_000


async def test_stale_token_can_neither_extend_nor_release_the_new_holders_lock(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    first = ThreadLocks(redis, keys=keys, ttl_s=0.3)
    second = ThreadLocks(second_client, keys=keys, ttl_s=20.0)
    stale = await first.acquire("t1")
    assert stale is not None
    current = await wait_until(lambda: second.acquire("t1"), timeout=5.0)

    assert await first.extend(stale) is False
    assert await first.release(stale) is False
    assert await first.release(Lock("t1", "forged-token", 30.0)) is False

    assert await redis.get(keys.lock("t1")) == current.token.encode()
    assert await redis.pttl(keys.lock("t1")) > 10_000  # the stale extend did not shorten it
    assert await second.extend(current) is True
    assert await second.release(current) is True
    assert await first.is_locked("t1") is False


async def test_release_frees_the_lock_for_the_next_holder(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    first = ThreadLocks(redis, keys=keys)
    second = ThreadLocks(second_client, keys=keys)
    lock = await first.acquire("t1")
    assert lock is not None
    assert await first.is_locked("t1") is True
    assert await first.release(lock) is True
    assert await first.release(lock) is False
    assert await second.acquire("t1") is not None


async def test_locks_of_different_threads_are_independent(
    redis: aioredis.Redis, keys: Keys
) -> None:
    locks = ThreadLocks(redis, keys=keys)
    assert await locks.acquire("t1") is not None
    assert await locks.acquire("t2") is not None


async def test_a_sub_millisecond_ttl_still_acquires_and_expires(
    redis: aioredis.Redis, keys: Keys
) -> None:
    locks = ThreadLocks(redis, keys=keys, ttl_s=0.0004)
    lock = await locks.acquire("t1")
    assert lock is not None
    await wait_until(lambda: locks.acquire("t1"), timeout=5.0)


async def test_request_stop_is_false_when_nothing_runs_and_true_when_a_lock_is_held(
    redis: aioredis.Redis, keys: Keys
) -> None:
    locks = ThreadLocks(redis, keys=keys)
    assert await locks.request_stop("t1") is False
    assert await redis.exists(keys.stop("t1")) == 0
    assert await locks.take_stop("t1") is False

    assert await locks.acquire("t1") is not None
    assert await locks.request_stop("t1") is True
    assert 0 < await redis.ttl(keys.stop("t1")) <= 600


async def test_take_stop_is_consumed_exactly_once(redis: aioredis.Redis, keys: Keys) -> None:
    locks = ThreadLocks(redis, keys=keys)
    assert await locks.acquire("t1") is not None
    assert await locks.request_stop("t1") is True
    await warm_pool(redis, 20)
    seen = await asyncio.gather(*(locks.take_stop("t1") for _ in range(20)))
    assert seen.count(True) == 1
    assert await locks.take_stop("t1") is False


async def test_acquire_clears_a_stale_stop_flag(redis: aioredis.Redis, keys: Keys) -> None:
    locks = ThreadLocks(redis, keys=keys)
    old = await locks.acquire("t1")
    assert old is not None
    assert await locks.request_stop("t1") is True
    assert await locks.release(old) is True  # the turn ended before it looked at the flag

    assert await locks.acquire("t1") is not None
    assert await locks.take_stop("t1") is False


async def test_a_failed_acquire_leaves_the_holders_stop_flag(
    redis: aioredis.Redis, second_client: aioredis.Redis, keys: Keys
) -> None:
    holder = ThreadLocks(redis, keys=keys)
    other = ThreadLocks(second_client, keys=keys)
    assert await holder.acquire("t1") is not None
    assert await other.request_stop("t1") is True
    assert await other.acquire("t1") is None
    assert await holder.take_stop("t1") is True
