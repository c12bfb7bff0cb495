"""Dedupe against a real server: a message's ids belong to the one inbox entry that claimed them
first; that entry may claim again (a resend, a reclaim) and learns whether it already finished."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from storage import DEDUPE_TTL_S, Claim, Dedupe, Keys
from tests.integration.storage.racing import warm_pool

__all__: list[str] = []


async def test_of_twenty_racing_claims_of_overlapping_ids_one_wins_and_no_loser_sets_an_id(
    redis: aioredis.Redis, keys: Keys
) -> None:
    # Twin deliveries of one Slack message: the same chat+ts, each with its own event id, half of
    # them listing the ids in the other order. Every delivery is its own inbox entry.
    dedupe = Dedupe(redis, keys=keys)
    await warm_pool(redis, 20)

    def ids(i: int) -> list[str]:
        both = ["C1:1.0", f"Ev{i}"]
        return both if i % 2 else both[::-1]

    results = await asyncio.gather(
        *(dedupe.claim("slack", ids(i), scope="C1", owner=f"{i}-0") for i in range(20))
    )
    assert results.count(Claim.NEW) == 1
    assert results.count(Claim.DUPLICATE) == 19
    winner = results.index(Claim.NEW)
    assert await redis.get(keys.dedupe("slack", "C1:1.0", "C1")) == f"{winner}-0".encode()
    assert await redis.get(keys.dedupe("slack", f"Ev{winner}", "C1")) == f"{winner}-0".encode()
    for i in range(20):  # all or nothing: a loser claimed none of its ids, not even its fresh one
        if i != winner:
            assert await redis.exists(keys.dedupe("slack", f"Ev{i}", "C1")) == 0


async def test_a_claim_sharing_one_id_with_an_earlier_message_is_a_duplicate_and_sets_nothing(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim("tg", ["42:7"], scope="42", owner="1-0") is Claim.NEW
    assert await dedupe.claim("tg", ["u1001", "42:7"], scope="42", owner="2-0") is Claim.DUPLICATE
    assert await redis.exists(keys.dedupe("tg", "u1001", "42")) == 0
    assert await dedupe.claim("tg", ["u1001"], scope="42", owner="3-0") is Claim.NEW


async def test_the_same_owner_claiming_again_is_new_not_a_duplicate(
    redis: aioredis.Redis, keys: Keys
) -> None:
    # redis-py resends a script whose reply was lost; another worker reclaims a crashed one's
    # entry. Both claim with the entry that already holds the ids: still theirs to handle.
    dedupe = Dedupe(redis, keys=keys)
    ids = ["C1:1.0", "Ev1"]
    assert await dedupe.claim("slack", ids, scope="C1", owner="5-0") is Claim.NEW
    assert await dedupe.claim("slack", ids, scope="C1", owner="5-0") is Claim.NEW
    assert await dedupe.claim("slack", ids[::-1], scope="C1", owner="5-0") is Claim.NEW
    assert await dedupe.claim("slack", ids, scope="C1", owner="6-0") is Claim.DUPLICATE


async def test_after_finish_the_owner_gets_done_and_every_other_entry_a_duplicate(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    ids = ["C1:1.0", "Ev1"]
    assert await dedupe.claim("slack", ids, scope="C1", owner="5-0") is Claim.NEW
    await dedupe.finish("slack", ids, scope="C1", owner="5-0")

    assert await dedupe.claim("slack", ids, scope="C1", owner="5-0") is Claim.DONE
    assert await dedupe.claim("slack", ["Ev1"], scope="C1", owner="5-0") is Claim.DONE
    assert await dedupe.claim("slack", ids, scope="C1", owner="6-0") is Claim.DUPLICATE
    assert await dedupe.claim("slack", ["C1:1.0", "Ev2"], scope="C1", owner="7-0") is (
        Claim.DUPLICATE
    )
    assert await redis.get(keys.dedupe("slack", "Ev1", "C1")) == b"5-0:done"
    assert await redis.exists(keys.dedupe("slack", "Ev2", "C1")) == 0


async def test_finish_by_another_entry_leaves_the_owners_claim_unfinished(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim("tg", ["42:7"], scope="42", owner="1-0") is Claim.NEW
    await dedupe.finish("tg", ["42:7"], scope="42", owner="2-0")
    assert await redis.get(keys.dedupe("tg", "42:7", "42")) == b"1-0"
    assert await dedupe.claim("tg", ["42:7"], scope="42", owner="1-0") is Claim.NEW
    assert await dedupe.claim("tg", ["42:7"], scope="42", owner="2-0") is Claim.DUPLICATE


async def test_a_repeated_id_within_one_claim_is_claimed_once(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim("tg", ["m-1", "m-1"], scope="42", owner="1-0") is Claim.NEW
    assert await dedupe.claim("tg", ["m-1", "m-1"], scope="42", owner="2-0") is Claim.DUPLICATE


async def test_claim_and_finish_set_every_id_with_the_day_long_ttl(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert DEDUPE_TTL_S == 24 * 3600
    assert await dedupe.claim("tg", ["42:7", "u1001"], scope="42", owner="1-0") is Claim.NEW
    for pid in ("42:7", "u1001"):
        assert DEDUPE_TTL_S - 60 <= await redis.ttl(keys.dedupe("tg", pid, "42")) <= DEDUPE_TTL_S
    await redis.expire(keys.dedupe("tg", "42:7", "42"), 5)
    await dedupe.finish("tg", ["42:7", "u1001"], scope="42", owner="1-0")
    for pid in ("42:7", "u1001"):
        assert DEDUPE_TTL_S - 60 <= await redis.ttl(keys.dedupe("tg", pid, "42")) <= DEDUPE_TTL_S


async def test_a_custom_ttl_is_applied(redis: aioredis.Redis, keys: Keys) -> None:
    dedupe = Dedupe(redis, keys=keys, ttl_s=120)
    await dedupe.claim("tg", ["short"], scope="42", owner="1-0")
    assert 60 <= await redis.ttl(keys.dedupe("tg", "short", "42")) <= 120
    await dedupe.finish("tg", ["short"], scope="42", owner="1-0")
    assert 60 <= await redis.ttl(keys.dedupe("tg", "short", "42")) <= 120


async def test_the_same_id_on_another_platform_or_in_another_chat_is_a_different_message(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dedupe = Dedupe(redis, keys=keys)
    assert await dedupe.claim("tg", ["42"], scope="c1", owner="1-0") is Claim.NEW
    assert await dedupe.claim("slack", ["42"], scope="c1", owner="2-0") is Claim.NEW
    assert await dedupe.claim("discord", ["42"], scope="c1", owner="3-0") is Claim.NEW
    assert await dedupe.claim("tg", ["42"], scope="c2", owner="4-0") is Claim.NEW
    assert await dedupe.claim("tg", ["42"], scope="c1", owner="5-0") is Claim.DUPLICATE
