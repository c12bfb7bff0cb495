"""Dedupe against a real server: one winner per provider id, however many deliveries race."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from storage import DEDUPE_TTL_S, Dedupe, Keys
from tests.integration.storage.racing import warm_pool

__all__: list[str] = []


async def test_twenty_concurrent_claims_of_one_id_have_exactly_one_winner(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    await warm_pool(redis, 20)
    results = await asyncio.gather(*(dedupe.claim("tg", "update-1") for _ in range(20)))
    assert results.count(True) == 1
    assert await dedupe.claim("tg", "update-1") is False


async def test_same_provider_id_on_another_platform_is_a_different_event(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim("tg", "42") is True
    assert await dedupe.claim("slack", "42") is True


async def test_claim_all_with_one_already_seen_id_is_rejected(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim("tg", "chat:1:msg:7") is True
    assert await dedupe.claim_all("tg", ["update-9", "chat:1:msg:7"]) is False
    assert await dedupe.claim_all("tg", ["chat:1:msg:7", "update-9"]) is False


async def test_claim_all_of_fresh_ids_claims_every_one(redis: aioredis.Redis, keys: Keys) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim_all("tg", ["update-1", "chat:1:msg:1"]) is True
    assert await dedupe.claim("tg", "update-1") is False
    assert await dedupe.claim("tg", "chat:1:msg:1") is False


async def test_claim_all_with_a_repeated_id_accepts_a_fresh_event(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim_all("tg", ["m-1", "m-1"]) is True
    assert await dedupe.claim_all("tg", ["m-1", "m-1"]) is False


async def test_concurrent_claim_all_of_shared_ids_have_exactly_one_winner(
    redis: aioredis.Redis, keys: Keys
) -> None:
    # Half the deliveries list the ids in the other order: a winner must still exist, and be one.
    dedupe = Dedupe(redis, keys=keys)
    ids = ["update-5", "chat:3:msg:8", "event-x"]
    await warm_pool(redis, 20)
    results = await asyncio.gather(
        *(dedupe.claim_all("tg", ids if i % 2 else ids[::-1]) for i in range(20))
    )
    assert results.count(True) == 1


async def test_release_lets_a_retry_claim_again(redis: aioredis.Redis, keys: Keys) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim("slack", "Ev01") is True
    await dedupe.release("slack", "Ev01")
    assert await dedupe.claim("slack", "Ev01") is True
    assert await dedupe.claim("slack", "Ev01") is False


async def test_claims_expire_after_about_a_day(redis: aioredis.Redis, keys: Keys) -> None:
    dedupe = Dedupe(redis, keys=keys)
    await dedupe.claim("tg", "single")
    await dedupe.claim_all("tg", ["a", "b"])
    assert DEDUPE_TTL_S == 24 * 3600
    for pid in ("single", "a", "b"):
        ttl = await redis.ttl(keys.dedupe("tg", pid))
        assert DEDUPE_TTL_S - 60 <= ttl <= DEDUPE_TTL_S


async def test_custom_ttl_is_applied(redis: aioredis.Redis, keys: Keys) -> None:
    await Dedupe(redis, keys=keys, ttl_s=120).claim("tg", "short")
    assert 60 <= await redis.ttl(keys.dedupe("tg", "short")) <= 120


async def test_scoped_claims_of_overlapping_ids_have_exactly_one_winner(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    await warm_pool(redis, 20)
    # twin deliveries of one message: the same chat+ts, each with its own event id
    results = await asyncio.gather(
        *(dedupe.claim_all("slack", ["C1:1.0", f"Ev{i}"], scope="C1") for i in range(20))
    )
    assert results.count(True) == 1
    losers = [f"Ev{i}" for i, won in enumerate(results) if not won]
    for event_id in losers:  # all-or-nothing: a loser claimed none of its ids
        assert not await redis.exists(keys.dedupe("slack", event_id, "C1"))


async def test_scoped_claim_sets_every_id_with_the_ttl(redis: aioredis.Redis, keys: Keys) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim_all("tg", ["42:7", "u1001", "u1001"], scope="42")
    for pid in ("42:7", "u1001"):
        assert 23 * 3600 < await redis.ttl(keys.dedupe("tg", pid, "42")) <= 24 * 3600
    assert not await dedupe.claim_all("tg", ["u1001", "42:8"], scope="42")
