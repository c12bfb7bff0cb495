"""Thread map against a real server: one thread per conversation, sliding TTLs, /new, reply lookup."""

from __future__ import annotations

import asyncio
import re
import time

import redis.asyncio as aioredis

from storage import THREAD_TTL_S, Keys, ThreadMap
from storage.thread_map import REPLIES_PER_THREAD
from tests.integration.storage.racing import warm_pool

__all__: list[str] = []

_DAY = 24 * 3600


async def test_twenty_concurrent_first_resolves_agree_on_one_thread(
    redis: aioredis.Redis, keys: Keys
) -> None:
    threads = ThreadMap(redis, keys=keys)
    await warm_pool(redis, 20)
    ids = await asyncio.gather(*(threads.resolve("tg:100") for _ in range(20)))
    assert len(set(ids)) == 1
    assert re.fullmatch(r"[0-9a-f]{32}", ids[0])
    assert await threads.peek("tg:100") == ids[0]
    assert await threads.resolve("tg:100") == ids[0]


async def test_different_conversations_get_different_threads(
    redis: aioredis.Redis, keys: Keys
) -> None:
    threads = ThreadMap(redis, keys=keys)
    assert await threads.resolve("tg:1") != await threads.resolve("tg:2")


async def test_resolve_slides_the_ttl_and_peek_does_not(redis: aioredis.Redis, keys: Keys) -> None:
    threads = ThreadMap(redis, keys=keys)
    thread_id = await threads.resolve("tg:1")
    key = keys.conversation("tg:1")
    assert THREAD_TTL_S == 30 * _DAY
    assert THREAD_TTL_S - 60 <= await redis.ttl(key) <= THREAD_TTL_S

    await redis.expire(key, 100)
    assert await threads.peek("tg:1") == thread_id
    assert await redis.ttl(key) <= 100

    assert await threads.resolve("tg:1") == thread_id
    assert THREAD_TTL_S - 60 <= await redis.ttl(key) <= THREAD_TTL_S


async def test_start_new_replaces_only_that_conversations_mapping(
    redis: aioredis.Redis, keys: Keys
) -> None:
    threads = ThreadMap(redis, keys=keys)
    old = await threads.resolve("tg:1")
    other = await threads.resolve("tg:2")

    new = await threads.start_new("tg:1")

    assert new != old
    assert await threads.resolve("tg:1") == new
    assert await threads.resolve("tg:2") == other
    assert THREAD_TTL_S - 60 <= await redis.ttl(keys.conversation("tg:1")) <= THREAD_TTL_S


async def test_peek_of_an_unknown_conversation_creates_nothing(
    redis: aioredis.Redis, keys: Keys
) -> None:
    threads = ThreadMap(redis, keys=keys)
    assert await threads.peek("tg:unknown") is None
    assert await redis.exists(keys.conversation("tg:unknown")) == 0


async def test_remembered_bot_messages_lead_back_to_their_thread(
    redis: aioredis.Redis, keys: Keys
) -> None:
    threads = ThreadMap(redis, keys=keys)
    thread_id = await threads.resolve("tg:1")
    await threads.remember_messages("tg", "1", ["501", "502"], thread_id)
    await threads.remember_messages("tg", "1", [], thread_id)

    assert await threads.thread_for_message("tg", "1", "501") == thread_id
    assert await threads.thread_for_message("tg", "1", "502") == thread_id
    assert await threads.thread_for_message("tg", "1", "503") is None
    assert await threads.thread_for_message("tg", "2", "501") is None
    assert await threads.thread_for_message("slack", "1", "501") is None


async def test_thread_for_message_slides_the_message_ttl(redis: aioredis.Redis, keys: Keys) -> None:
    threads = ThreadMap(redis, keys=keys)
    await threads.remember_messages("tg", "1", ["501"], "a" * 32)
    key = keys.message("tg", "1", "501")
    assert THREAD_TTL_S - 60 <= await redis.ttl(key) <= THREAD_TTL_S

    await redis.expire(key, 100)
    assert await threads.thread_for_message("tg", "1", "501") == "a" * 32
    assert THREAD_TTL_S - 60 <= await redis.ttl(key) <= THREAD_TTL_S


async def test_a_custom_ttl_is_used_for_every_mapping(redis: aioredis.Redis, keys: Keys) -> None:
    threads = ThreadMap(redis, keys=keys, ttl_s=2 * _DAY)
    thread_id = await threads.resolve("tg:1")
    await threads.remember_messages("tg", "1", ["9"], thread_id)
    for key in (keys.conversation("tg:1"), keys.message("tg", "1", "9")):
        assert 2 * _DAY - 60 <= await redis.ttl(key) <= 2 * _DAY


async def test_recent_lists_conversations_by_their_last_message(
    redis: aioredis.Redis, keys: Keys
) -> None:
    threads = ThreadMap(redis, keys=keys, ttl_s=3600)
    first = await threads.resolve("tg:1")
    second = await threads.resolve("slack:T1:C1:100.1")
    await redis.expire(keys.conversation("tg:1"), 3600 - 600)  # as if last used 10 minutes ago
    listed = await threads.recent()
    assert [(c.key, c.thread_id) for c in listed] == [
        ("slack:T1:C1:100.1", second),
        ("tg:1", first),
    ]
    assert 590 <= time.time() - listed[1].active_at <= 700
    await redis.expire(keys.conversation("slack:T1:C1:100.1"), 3600 - 60)
    await threads.resolve("tg:1")  # a new message makes it the most recent again
    assert [c.key for c in await threads.recent(limit=1)] == ["tg:1"]


async def test_a_long_conversation_keeps_a_fixed_number_of_reply_mappings(
    redis: aioredis.Redis, keys: Keys, prefix: str
) -> None:
    threads = ThreadMap(redis, keys=keys)
    thread_id = await threads.resolve("tg:-100:7")
    for n in range(REPLIES_PER_THREAD * 3):
        await threads.remember_messages("tg", "-100", [f"{n}a", f"{n}b"], thread_id)
    await threads.remember_messages("tg", "-100", ["last"], thread_id)  # a resend-safe repeat
    await threads.remember_messages("tg", "-100", ["last"], thread_id)

    mappings = [k async for k in redis.scan_iter(match=f"{prefix}msg:*", count=1000)]
    assert len(mappings) == REPLIES_PER_THREAD
    assert await redis.zcard(keys.replies(thread_id)) == REPLIES_PER_THREAD
    assert await threads.thread_for_message("tg", "-100", "last") == thread_id
    assert await threads.thread_for_message("tg", "-100", "0a") is None
    assert THREAD_TTL_S - 60 <= await redis.ttl(keys.replies(thread_id)) <= THREAD_TTL_S
