"""Pending warnings against a real server: per-run caps, one delivery, the global LRU cap, and
scripts that touch only the keys they declare."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
import redis.asyncio as aioredis

from storage import Keys, PendingWarnings
from tests.integration.storage.declared_keys import watch_scripts
from tests.integration.storage.racing import warm_pool

__all__: list[str] = []


async def _index(redis: aioredis.Redis, keys: Keys) -> set[tuple[str, str]]:
    """The run lists the global index holds, as (thread hash, run id)."""
    return {tuple(json.loads(m)) for m in await redis.zrange(keys.warnings_index(), 0, -1)}


def _run(keys: Keys, thread_id: str, run_id: str) -> tuple[str, str]:
    return keys.pending_warnings(thread_id), run_id


async def _runs(redis: aioredis.Redis, keys: Keys, thread_id: str) -> set[str]:
    return {r.decode() for r in await redis.hkeys(keys.pending_warnings(thread_id))}


async def test_an_exact_duplicate_is_not_added_twice(redis: aioredis.Redis, keys: Keys) -> None:
    warnings = PendingWarnings(redis, keys=keys)
    assert await warnings.add("t1", "r1", "You called current_time 3 times.") is True
    assert await warnings.add("t1", "r1", "You called current_time 3 times.") is False
    assert await warnings.add("t1", "r1", "You called current_time 3 times!") is True
    assert await warnings.peek("t1", "r1") == [
        "You called current_time 3 times.",
        "You called current_time 3 times!",
    ]


async def test_at_most_the_four_newest_warnings_are_kept(redis: aioredis.Redis, keys: Keys) -> None:
    warnings = PendingWarnings(redis, keys=keys)
    for n in range(7):
        await warnings.add("t1", "r1", f"warning {n} ✓")
    assert await warnings.peek("t1", "r1") == [f"warning {n} ✓" for n in range(3, 7)]


async def test_drain_returns_the_warnings_and_deletes_them(
    redis: aioredis.Redis, keys: Keys
) -> None:
    warnings = PendingWarnings(redis, keys=keys)
    await warnings.add("t1", "r1", "a")
    await warnings.add("t1", "r1", "b")
    assert await warnings.drain("t1", "r1") == ["a", "b"]
    assert await warnings.drain("t1", "r1") == []
    assert await redis.exists(keys.pending_warnings("t1")) == 0
    assert await _index(redis, keys) == set()


async def test_concurrent_drains_deliver_each_warning_once(
    redis: aioredis.Redis, keys: Keys
) -> None:
    warnings = PendingWarnings(redis, keys=keys, per_run=1000)
    delivered: list[str] = []
    await warm_pool(redis, 46)

    async def drainer() -> None:
        for _ in range(8):
            delivered.extend(await warnings.drain("t1", "r1"))
            await asyncio.sleep(0)

    await asyncio.gather(
        *(warnings.add("t1", "r1", f"w{n}") for n in range(40)), *(drainer() for _ in range(6))
    )
    delivered.extend(await warnings.drain("t1", "r1"))
    assert Counter(delivered) == Counter(f"w{n}" for n in range(40))


async def test_clear_other_runs_leaves_only_the_given_run(
    redis: aioredis.Redis, keys: Keys
) -> None:
    warnings = PendingWarnings(redis, keys=keys)
    for run in ("r1", "r2", "r3"):
        await warnings.add("t1", run, f"from {run}")
    await warnings.add("t2", "r9", "other thread")

    await warnings.clear_other_runs("t1", "r2")

    assert await warnings.peek("t1", "r1") == []
    assert await warnings.peek("t1", "r3") == []
    assert await warnings.peek("t1", "r2") == ["from r2"]
    assert await warnings.peek("t2", "r9") == ["other thread"]
    assert await _runs(redis, keys, "t1") == {"r2"}
    assert await _index(redis, keys) == {_run(keys, "t1", "r2"), _run(keys, "t2", "r9")}


async def test_clear_run_removes_only_that_run(redis: aioredis.Redis, keys: Keys) -> None:
    warnings = PendingWarnings(redis, keys=keys)
    await warnings.add("t1", "r1", "one")
    await warnings.add("t1", "r2", "two")
    await warnings.clear_run("t1", "r1")
    assert await warnings.peek("t1", "r1") == []
    assert await warnings.peek("t1", "r2") == ["two"]
    assert await _runs(redis, keys, "t1") == {"r2"}


async def test_a_threads_warnings_carry_a_ttl_backstop(redis: aioredis.Redis, keys: Keys) -> None:
    warnings = PendingWarnings(redis, keys=keys)
    await warnings.add("t1", "r1", "x")
    assert 3590 <= await redis.ttl(keys.pending_warnings("t1")) <= 3600
    await redis.expire(keys.pending_warnings("t1"), 5)
    await warnings.add("t1", "r1", "x")  # a repeat still keeps the list alive
    assert 3590 <= await redis.ttl(keys.pending_warnings("t1")) <= 3600


async def test_a_fourth_run_key_evicts_the_least_recently_touched_one(
    redis: aioredis.Redis, keys: Keys
) -> None:
    warnings = PendingWarnings(redis, keys=keys, max_keys=3)
    for run in ("a", "b", "c"):
        await warnings.add("t1", run, f"from {run}")
    await warnings.add("t1", "a", "a again")  # now "b" is the least recently touched

    await warnings.add("t2", "d", "from d")

    assert await warnings.peek("t1", "b") == []
    assert await warnings.peek("t1", "a") == ["from a", "a again"]
    assert await warnings.peek("t1", "c") == ["from c"]
    assert await warnings.peek("t2", "d") == ["from d"]
    assert await _index(redis, keys) == {
        _run(keys, "t1", "a"),
        _run(keys, "t1", "c"),
        _run(keys, "t2", "d"),
    }


async def test_the_key_just_written_is_never_evicted_even_when_it_scores_oldest(
    redis: aioredis.Redis, keys: Keys
) -> None:
    warnings = PendingWarnings(redis, keys=keys, max_keys=3)
    for run in ("a", "b", "c"):
        await warnings.add("t1", run, f"from {run}")
    # Entries touched by a clock far ahead: the key about to be written will score lowest.
    future = 9e15
    by_run = {json.loads(m)[1]: m for m in await redis.zrange(keys.warnings_index(), 0, -1)}
    await redis.zadd(
        keys.warnings_index(),
        {by_run["a"]: future, by_run["b"]: future + 1, by_run["c"]: future + 2},
    )

    await warnings.add("t1", "d", "from d")

    assert await warnings.peek("t1", "d") == ["from d"]
    assert await warnings.peek("t1", "a") == []
    assert await warnings.peek("t1", "b") == ["from b"]
    assert await warnings.peek("t1", "c") == ["from c"]
    assert await _index(redis, keys) == {
        _run(keys, "t1", "b"),
        _run(keys, "t1", "c"),
        _run(keys, "t1", "d"),
    }


async def test_every_list_stays_indexed_and_under_the_cap_with_concurrent_adds(
    redis: aioredis.Redis, keys: Keys
) -> None:
    # More concurrent writers than the cap: an index entry may outlive its list (harmless, it only
    # tightens the cap), but a list outside the index would escape the cap.
    warnings = PendingWarnings(redis, keys=keys, max_keys=5)
    await warm_pool(redis, 30)
    await asyncio.gather(*(warnings.add(f"t{n}", "r", "w") for n in range(30)))
    assert await redis.zcard(keys.warnings_index()) == 5
    alive = {_run(keys, f"t{n}", "r") for n in range(30) if await warnings.peek(f"t{n}", "r")}
    assert len(alive) <= 5
    assert alive <= await _index(redis, keys)


async def test_every_key_a_warning_script_touches_is_passed_in_its_keys(
    redis: aioredis.Redis, keys: Keys, prefix: str, redis_cluster: bool
) -> None:
    if redis_cluster:
        pytest.skip("MONITOR watches one node; the single-node passes prove it")
    warnings = PendingWarnings(redis, keys=keys, max_keys=2)
    async with watch_scripts(redis, prefix) as seen:
        for run in ("r1", "r2", "r3"):
            await warnings.add("t1", run, f"from {run}")
            await warnings.add("t1", run, f"from {run}")
        await warnings.peek("t1", "r3")
        await warnings.clear_other_runs("t1", "r3")
        await warnings.drain("t1", "r3")
        await warnings.clear_run("t1", "r3")
    assert seen.touched  # the scripts ran and were seen
    assert seen.undeclared == set()
