"""Context records against a real server: a thread's mark and cached context in one read and
one MULTI, and each group's observed record bounded, deduplicated and expiring."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from redis.cluster import key_slot

from storage import CONTEXT_CACHE_TTL_S, OBSERVED_TTL_S, THREAD_TTL_S, ContextRecords, Keys
from switchboard.conversation import ContextMark, ContextMessage, ContextState

__all__: list[str] = []


def said(message_id: int, text: str = "hi", sender: str = "Ann") -> ContextMessage:
    return ContextMessage(str(message_id), sender, 1_700_000_000.0 + message_id, text)


async def test_a_thread_without_records_has_an_empty_state(
    redis: aioredis.Redis, keys: Keys
) -> None:
    records = ContextRecords(redis, keys=keys)
    assert await records.load("t1") == ContextState()
    assert await records.load("t1", observed=("telegram", "-100"), before="50", limit=5) == (
        ContextState()
    )


async def test_mark_and_cache_are_saved_together_and_read_back_in_one_load(
    redis: aioredis.Redis, keys: Keys
) -> None:
    records = ContextRecords(redis, keys=keys)
    cache = [said(1, "Should we ship?", "Ann"), said(2, "Monday.", "Bob")]
    mark = ContextMark(at="3", previous=None)
    await records.save("t1", mark=mark, cache=cache)

    state = await records.load("t1")
    assert state.mark == mark and state.cached == tuple(cache)
    assert 0 < await redis.ttl(keys.context_cache("t1")) <= CONTEXT_CACHE_TTL_S
    assert CONTEXT_CACHE_TTL_S < await redis.ttl(keys.context_mark("t1")) <= THREAD_TTL_S


async def test_saving_only_the_mark_keeps_the_cache_and_an_empty_cache_counts(
    redis: aioredis.Redis, keys: Keys
) -> None:
    records = ContextRecords(redis, keys=keys)
    await records.save("t1", mark=ContextMark(at="3"), cache=[])
    await records.save("t1", mark=ContextMark(at="7", previous="3"))
    state = await records.load("t1")
    assert state.mark == ContextMark(at="7", previous="3")
    assert state.cached == ()  # read and empty: not read again


async def test_an_unreadable_cache_counts_as_not_cached(redis: aioredis.Redis, keys: Keys) -> None:
    records = ContextRecords(redis, keys=keys)
    await redis.set(keys.context_cache("t1"), b"\xff not json")
    assert (await records.load("t1")).cached is None


async def test_the_observed_record_keeps_the_newest_and_reads_below_the_trigger(
    redis: aioredis.Redis, keys: Keys
) -> None:
    records = ContextRecords(redis, keys=keys)
    for message_id in (10, 12, 11, 13, 14):  # out of order, as workers may record them
        await records.observe("telegram", "-100", said(message_id), keep=3)
    key = keys.observed("telegram", "-100")
    assert await redis.zcard(key) == 3
    assert 0 < await redis.ttl(key) <= OBSERVED_TTL_S

    state = await records.load("t1", observed=("telegram", "-100"), before="14", limit=5)
    assert [m.message_id for m in state.observed] == ["13", "12"]  # newest first, below 14
    state = await records.load("t1", observed=("telegram", "-100"), before="99", limit=2)
    assert [m.message_id for m in state.observed] == ["14", "13"]


async def test_recording_a_message_twice_keeps_one(redis: aioredis.Redis, keys: Keys) -> None:
    records = ContextRecords(redis, keys=keys)
    await asyncio.gather(*(records.observe("telegram", "-100", said(5), keep=10) for _ in range(5)))
    await records.observe("telegram", "-100", said(5, "edited words"), keep=10)
    state = await records.load("t1", observed=("telegram", "-100"), before="", limit=10)
    assert [m.message_id for m in state.observed] == ["5"]


async def test_a_threads_keys_share_a_slot_and_groups_do_not_share_a_record(keys: Keys) -> None:
    assert key_slot(keys.context_mark("t1").encode()) == key_slot(keys.context_cache("t1").encode())
    assert keys.observed("telegram", "-100") != keys.observed("telegram", "-100:t5")
