"""A message's dedupe claim, flood-limit hit and (for a DM) thread in one round trip, against a
real server."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from storage import Admission, Claim, Dedupe, Keys, RateDecision, RateLimiter, ThreadMap
from storage.scripts import ScriptCall, run_scripts
from switchboard.state import Admitted
from tests.round_trips import counting_client

__all__: list[str] = []


def _admission(redis: aioredis.Redis, keys: Keys, limit: int = 2) -> Admission:
    rate = RateLimiter(redis, keys=keys, limit=limit, window_s=60.0)
    threads = ThreadMap(redis, keys=keys)
    return Admission(redis, dedupe=Dedupe(redis, keys=keys), rate=rate, threads=threads)


async def _admit_dm(admission: Admission, chat: str, message: str, owner: str) -> Admitted:
    """A DM's admission, its conversation's thread asked for too."""
    return await admission.admit(
        "slack",
        [f"{chat}:{message}"],
        scope=chat,
        owner=owner,
        sender_id="U1",
        message_id=message,
        conversation=f"slack:T1:{chat}",
    )


async def _admit(admission: Admission, message: str, owner: str) -> tuple[Claim, RateDecision]:
    admitted = await admission.admit(
        "slack", [f"D1:{message}"], scope="D1", owner=owner, sender_id="U1", message_id=message
    )
    assert admitted.thread_id is None
    return admitted.claim, admitted.rate


async def test_a_twin_delivery_is_a_duplicate_and_is_not_counted_twice(
    redis: aioredis.Redis, keys: Keys
) -> None:
    admission = _admission(redis, keys, limit=2)
    assert await _admit(admission, "m1", "1-0") == (Claim.NEW, RateDecision.ALLOW)
    assert await _admit(admission, "m1", "2-0") == (Claim.DUPLICATE, RateDecision.ALLOW)
    assert await _admit(admission, "m2", "3-0") == (Claim.NEW, RateDecision.ALLOW)
    assert await redis.zcard(keys.rate("slack", "U1")) == 2
    assert await _admit(admission, "m3", "4-0") == (Claim.NEW, RateDecision.NOTIFY)


async def test_the_same_entry_admitted_again_after_a_lost_reply_is_new_and_counted_once(
    redis: aioredis.Redis, keys: Keys
) -> None:
    admission = _admission(redis, keys, limit=1)
    assert await _admit(admission, "m1", "1-0") == (Claim.NEW, RateDecision.ALLOW)
    assert await _admit(admission, "m1", "1-0") == (Claim.NEW, RateDecision.ALLOW)
    assert await redis.zcard(keys.rate("slack", "U1")) == 1


@pytest.mark.server_wide  # SCRIPT FLUSH
async def test_both_scripts_go_in_one_round_trip_and_are_sent_again_after_a_script_flush(
    redis_url: str, keys: Keys, redis_cluster: bool
) -> None:
    if redis_cluster:
        pytest.skip("a cluster client talks to every node directly; one proxy cannot count it")
    async with counting_client(redis_url) as (client, proxy):
        admission = _admission(client, keys, limit=10)
        await _admit(admission, "m0", "0-0")  # connected, scripts loaded
        proxy.requests = 0
        assert await _admit(admission, "m1", "1-0") == (Claim.NEW, RateDecision.ALLOW)
        assert proxy.requests == 1
        await client.script_flush()
        proxy.requests = 0
        assert await _admit(admission, "m2", "2-0") == (Claim.NEW, RateDecision.ALLOW)
        assert proxy.requests == 2  # NOSCRIPT for both, then their text


async def test_a_started_conversations_thread_comes_in_the_same_round_trip_and_none_is_started(
    redis_url: str, keys: Keys, redis_cluster: bool
) -> None:
    if redis_cluster:
        pytest.skip("a cluster client talks to every node directly; one proxy cannot count it")
    async with counting_client(redis_url) as (client, proxy):
        admission = _admission(client, keys, limit=10)
        threads = ThreadMap(client, keys=keys)
        for n in range(2):  # connected, scripts loaded
            await _admit_dm(admission, "D0", f"w{n}", f"{n}-1")
        proxy.requests = 0
        unstarted = await _admit_dm(admission, "D1", "m1", "1-0")
        assert proxy.requests == 1 and unstarted.thread_id is None
        assert await threads.peek("slack:T1:D1") is None  # only Routing starts one
        started = await threads.resolve("slack:T1:D1")
        await client.expire(keys.conversation("slack:T1:D1"), 60)
        proxy.requests = 0
        known = await _admit_dm(admission, "D1", "m2", "2-0")
        assert proxy.requests == 1
        assert (known.claim, known.rate, known.thread_id) == (
            Claim.NEW,
            RateDecision.ALLOW,
            started,
        )
        assert await client.ttl(keys.conversation("slack:T1:D1")) > 60  # refreshed as resolve does


async def test_a_script_error_among_the_calls_is_raised(redis: aioredis.Redis, keys: Keys) -> None:
    broken = redis.register_script("return redis.call('INCR', KEYS[1], 'no such arg')")
    fine = redis.register_script("return 1")
    calls = [
        ScriptCall(fine, [keys.rate("t", "a")], []),
        ScriptCall(broken, [keys.rate("t", "b")], []),
    ]
    with pytest.raises(aioredis.ResponseError):
        await run_scripts(redis, calls)
