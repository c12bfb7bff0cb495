"""The orphan index against a real server: a watched thread becomes due after the grace time,
and leaves only when the sweeper forgets it with the score it saw."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis

from storage import Keys, Orphans

__all__: list[str] = []


async def test_a_watched_thread_is_due_only_after_the_grace_time(
    redis: aioredis.Redis, keys: Keys
) -> None:
    orphans = Orphans(redis, keys=keys, grace_s=1.5)  # room for a busy machine before `due`
    before = time.time()
    await orphans.watch("t1")
    assert await orphans.due() == []

    await asyncio.sleep(1.6)
    due = await orphans.due()
    assert [t for t, _ in due] == ["t1"]
    assert before + 1.5 <= due[0][1] <= time.time()


async def test_watching_again_never_makes_a_thread_due_sooner(
    redis: aioredis.Redis, keys: Keys
) -> None:
    await Orphans(redis, keys=keys, grace_s=60).watch("t1")
    await Orphans(redis, keys=keys, grace_s=0).watch("t1")
    assert await Orphans(redis, keys=keys, grace_s=0).due() == []
    assert await redis.zscore(keys.orphans(), "t1") > time.time() + 50


async def test_watching_again_pushes_a_due_thread_out(redis: aioredis.Redis, keys: Keys) -> None:
    await Orphans(redis, keys=keys, grace_s=0).watch("t1")
    assert [t for t, _ in await Orphans(redis, keys=keys, grace_s=0).due()] == ["t1"]
    await Orphans(redis, keys=keys, grace_s=60).watch("t1")
    assert await Orphans(redis, keys=keys, grace_s=0).due() == []


async def test_forget_with_the_score_seen_drops_the_thread(
    redis: aioredis.Redis, keys: Keys
) -> None:
    orphans = Orphans(redis, keys=keys, grace_s=0)
    await orphans.watch("t1")
    await orphans.watch("t2")
    due = dict(await orphans.due())
    await orphans.forget("t1", due["t1"])
    assert [t for t, _ in await orphans.due()] == ["t2"]
    assert await redis.zscore(keys.orphans(), "t1") is None


async def test_forget_does_not_drop_a_thread_re_armed_after_the_score_seen(
    redis: aioredis.Redis, keys: Keys
) -> None:
    orphans = Orphans(redis, keys=keys, grace_s=0)
    await orphans.watch("t1")
    [(thread_id, seen)] = await orphans.due()
    await asyncio.sleep(0.01)
    await orphans.watch("t1")  # a message joined the queue while the sweeper looked at it

    await orphans.forget(thread_id, seen)
    rearmed = await redis.zscore(keys.orphans(), "t1")
    assert rearmed is not None and rearmed > seen
    assert [t for t, _ in await orphans.due()] == ["t1"]


async def test_forget_of_an_unwatched_thread_changes_nothing(
    redis: aioredis.Redis, keys: Keys
) -> None:
    orphans = Orphans(redis, keys=keys, grace_s=0)
    await orphans.forget("never-watched", time.time())
    assert await redis.exists(keys.orphans()) == 0


async def test_due_returns_at_most_limit_threads_oldest_first(
    redis: aioredis.Redis, keys: Keys
) -> None:
    orphans = Orphans(redis, keys=keys, grace_s=0)
    for n in range(5):
        await orphans.watch(f"t{n}")
        await asyncio.sleep(0.002)
    due = await orphans.due(limit=3)
    assert [t for t, _ in due] == ["t0", "t1", "t2"]
