"""`switchboard store stats` as the installed script runs it, against the test Redis: key families
with their counts, keys without a TTL, memory from MEMORY USAGE, and what bounds them."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from storage import Accounts, Keys, RedisCheckpointSaver
from storage.key_families import store_stats
from tests.integration.service.test_cli_admin import run_cli
from tests.integration.storage.test_checkpoint import _put

__all__: list[str] = []


async def _fill(redis: aioredis.Redis, prefix: str) -> None:
    keys = Keys(prefix)
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    for thread in ("a", "b", "c"):
        await _put(saver, thread, 1, {"messages": "x" * 2000}, run_id=f"run-{thread}")
    for n in range(5):
        await redis.set(keys.dedupe("telegram", f"m{n}", "7"), "entry", ex=3600)
    await Accounts(redis, keys=keys).create("acme")
    await redis.set(f"{prefix}stray:thing", "no ttl, no family")


async def test_stats_count_each_family_and_estimate_its_memory(
    redis: aioredis.Redis, prefix: str
) -> None:
    await _fill(redis, prefix)

    stats = {s.name: s for s in await store_stats(redis, prefix, sample=2)}

    checkpoints = stats["{<thread>}:cp:<part>"]
    assert checkpoints.keys == 3 * 4  # idx, chk, blob, ridx of each thread (no writes yet)
    assert checkpoints.sampled == 2 and checkpoints.bytes > 0
    dedupe = stats["dedupe:{<chat>}:<id>"]
    assert (dedupe.keys, dedupe.without_ttl) == (5, 0)
    assert stats["{access}:<account, key, link>"].without_ttl >= 2
    assert stats["(undocumented) stray"].without_ttl == 1


async def test_the_cli_prints_families_with_the_bound_of_keys_without_a_ttl(
    redis: aioredis.Redis, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    await _fill(redis, prefix)

    code, out, err = await run_cli(
        "store", "stats", redis_url=redis_url, prefix=prefix, cwd=tmp_path
    )

    assert code == 0, err
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "12" in lines["{<thread>}:cp:<part>"]
    assert "operator data" in lines["{access}:<account, key, link>"]
    assert "(undocumented) stray" in lines
    assert out.splitlines()[-1].startswith(f"keys under '{prefix}'; the server's used_memory:")
    assert "Traceback" not in err
