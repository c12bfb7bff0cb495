"""Rate limiter against a real server: the limit holds under concurrency, one notice per window."""

from __future__ import annotations

import asyncio
from collections import Counter

import redis.asyncio as aioredis

from storage import Keys, RateDecision, RateLimiter
from tests.integration.storage.racing import warm_pool
from tests.support import wait_until

__all__: list[str] = []


async def test_five_allowed_then_one_notice_then_silence(redis: aioredis.Redis, keys: Keys) -> None:
    limiter = RateLimiter(redis, keys=keys, limit=5, window_s=60.0)
    decisions = [await limiter.hit("tg", "u1") for _ in range(9)]
    assert decisions == [RateDecision.ALLOW] * 5 + [RateDecision.NOTIFY] + [RateDecision.SILENT] * 3


async def test_senders_and_platforms_are_counted_separately(
    redis: aioredis.Redis, keys: Keys
) -> None:
    limiter = RateLimiter(redis, keys=keys, limit=1, window_s=60.0)
    assert await limiter.hit("tg", "u1") == RateDecision.ALLOW
    assert await limiter.hit("tg", "u1") == RateDecision.NOTIFY
    assert await limiter.hit("tg", "u2") == RateDecision.ALLOW
    assert await limiter.hit("slack", "u1") == RateDecision.ALLOW


async def test_a_new_window_allows_again(redis: aioredis.Redis, keys: Keys) -> None:
    limiter = RateLimiter(redis, keys=keys, limit=2, window_s=2.0)  # three hits fit in it
    assert [await limiter.hit("tg", "u1") for _ in range(3)] == [
        RateDecision.ALLOW,
        RateDecision.ALLOW,
        RateDecision.NOTIFY,
    ]

    async def allowed() -> bool:
        return await limiter.hit("tg", "u1") == RateDecision.ALLOW

    # Rejected hits are not counted, so polling does not keep the sender locked out.
    await wait_until(allowed, timeout=5.0)


async def test_keys_expire_with_the_window(redis: aioredis.Redis, keys: Keys) -> None:
    limiter = RateLimiter(redis, keys=keys, limit=1, window_s=30.0)
    await limiter.hit("tg", "u1")
    await limiter.hit("tg", "u1")
    assert 0 < await redis.pttl(keys.rate("tg", "u1")) <= 30_000
    assert 0 < await redis.pttl(keys.rate_notice("tg", "u1")) <= 30_000


async def test_concurrent_hits_never_allow_more_than_the_limit(
    redis: aioredis.Redis, keys: Keys
) -> None:
    limiter = RateLimiter(redis, keys=keys, limit=5, window_s=60.0)
    await warm_pool(redis, 40)
    decisions = await asyncio.gather(*(limiter.hit("tg", "u1") for _ in range(40)))
    assert Counter(decisions) == {
        RateDecision.ALLOW: 5,
        RateDecision.NOTIFY: 1,
        RateDecision.SILENT: 34,
    }
    assert await redis.zcard(keys.rate("tg", "u1")) == 5


async def test_a_message_counted_again_by_its_id_is_let_through_uncounted(
    redis: aioredis.Redis, keys: Keys
) -> None:
    limiter = RateLimiter(redis, keys=keys, limit=2, window_s=60.0)
    assert await limiter.hit("tg", "u1", "c1:m1") == RateDecision.ALLOW
    assert await limiter.hit("tg", "u1", "c1:m1") == RateDecision.ALLOW  # a redelivery
    assert await limiter.hit("tg", "u1", "c1:m2") == RateDecision.ALLOW
    assert await redis.zcard(keys.rate("tg", "u1")) == 2
    assert await limiter.hit("tg", "u1", "c1:m3") == RateDecision.NOTIFY
    assert await limiter.hit("tg", "u1", "c1:m2") == RateDecision.ALLOW  # counted already
