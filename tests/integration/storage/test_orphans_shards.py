"""The sharded orphan index against a real server: marks spread over the shards, every shard is
checked, and marks left in the layout of another shard count are still swept and forgotten."""

from __future__ import annotations

import time

import redis.asyncio as aioredis

from storage import Keys, Orphans
from storage.shards import Layout, announce

__all__: list[str] = []


async def test_marks_spread_over_the_shards_and_every_shard_is_checked(
    redis: aioredis.Redis, keys: Keys
) -> None:
    orphans = Orphans(redis, keys=keys, grace_s=0, shards=4)
    threads = [f"t{n}" for n in range(20)]
    for thread_id in threads:
        await orphans.watch(thread_id)
    used = [tag for tag in Layout(4).tags if await redis.zcard(keys.orphans(tag))]
    assert len(used) > 1
    assert await redis.exists(keys.orphans()) == 0  # the single index is not written

    due = dict(await orphans.due())
    assert sorted(due) == sorted(threads)
    for thread_id in threads[:10]:
        await orphans.forget(thread_id, due[thread_id])
    assert sorted(t for t, _ in await orphans.due()) == sorted(threads[10:])


async def test_a_re_armed_mark_in_a_shard_is_not_forgotten(
    redis: aioredis.Redis, keys: Keys
) -> None:
    orphans = Orphans(redis, keys=keys, grace_s=0, shards=4)
    await orphans.watch("t1")
    seen = dict(await orphans.due())["t1"]
    await Orphans(redis, keys=keys, grace_s=60, shards=4).watch("t1")
    await orphans.forget("t1", seen)
    score = await redis.zscore(keys.orphans(Layout(4).tag_for("t1")), "t1")
    assert score is not None and score > time.time() + 50


async def test_marks_of_the_single_index_are_swept_after_the_shard_count_grew(
    redis: aioredis.Redis, keys: Keys
) -> None:
    await Orphans(redis, keys=keys, grace_s=0).watch("left-behind")
    assert await announce(redis, keys, 4) == (1,)  # a 4-shard process started

    orphans = Orphans(redis, keys=keys, grace_s=0, shards=4)
    due = dict(await orphans.due())
    assert list(due) == ["left-behind"]
    await orphans.forget("left-behind", due["left-behind"])
    assert await redis.zscore(keys.orphans(), "left-behind") is None
    assert await orphans.due() == []
