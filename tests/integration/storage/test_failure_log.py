"""The failure log keeps the newest failures by reference id, bounded and expiring."""

from __future__ import annotations

import redis.asyncio as aioredis

from storage import FailureLog, FailureRecord, Keys


def _failure(ref: str, at: float = 1.0) -> FailureRecord:
    return FailureRecord(
        ref=ref,
        at=at,
        category="agent",
        event="turn.failed",
        error="AgentError",
        platform="telegram",
        chat_id="42",
        thread_id="t-1",
    )


async def test_failure_is_found_by_the_reference_a_user_pasted(
    redis: aioredis.Redis, keys: Keys
) -> None:
    log = FailureLog(redis, keys=keys)
    await log.record(_failure("1a2b3c4d"))
    await log.record(_failure("ffff0000"))
    assert [f.ref for f in await log.find("(ref 1A2B3C4D)")] == ["1a2b3c4d"]
    assert await log.find("1a2b") == [_failure("1a2b3c4d")]
    assert await log.find("deadbeef") == []
    assert await log.find("  ") == []


async def test_log_keeps_only_the_newest_failures_and_expires(
    redis: aioredis.Redis, keys: Keys
) -> None:
    log = FailureLog(redis, keys=keys, kept=3, ttl_s=600)
    for n in range(5):
        await log.record(_failure(f"ref{n}", at=float(n)))
    assert [f.ref for f in await log.recent()] == ["ref4", "ref3", "ref2"]
    assert 0 < await redis.ttl(keys.failures()) <= 600


async def test_damaged_entry_is_skipped_not_fatal(redis: aioredis.Redis, keys: Keys) -> None:
    log = FailureLog(redis, keys=keys)
    await log.record(_failure("good"))
    await redis.lpush(keys.failures(), b"not json")
    assert [f.ref for f in await log.recent()] == ["good"]
