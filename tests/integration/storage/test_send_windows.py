"""Send windows in real Redis: two processes' `SendWindows` on one owner count together."""

from __future__ import annotations

import redis.asyncio as aioredis

from storage import Keys, SendWindow, SendWindows

CHANNEL = SendWindow("c:C1", limit=2, seconds=10.0)


async def test_two_processes_of_one_owner_share_a_window(redis: aioredis.Redis, keys: Keys) -> None:
    first = SendWindows(redis, keys=keys, owner="slack:abc")
    second = SendWindows(redis, keys=keys, owner="slack:abc")
    assert await first.reserve([CHANNEL]) == 0.0
    assert await second.reserve([CHANNEL]) == 0.0
    assert 8.0 < await first.reserve([CHANNEL]) <= 10.0  # what is left of the window


async def test_owners_and_scopes_are_counted_apart(redis: aioredis.Redis, keys: Keys) -> None:
    slack = SendWindows(redis, keys=keys, owner="slack:abc")
    discord = SendWindows(redis, keys=keys, owner="discord:abc")
    one = SendWindow("c:C1", limit=1, seconds=10.0)
    assert await slack.reserve([one]) == 0.0
    assert await discord.reserve([one]) == 0.0
    assert await slack.reserve([SendWindow("c:C2", limit=1, seconds=10.0)]) == 0.0


async def test_a_send_waits_for_the_tightest_window_and_keys_expire(
    redis: aioredis.Redis, keys: Keys
) -> None:
    windows = SendWindows(redis, keys=keys, owner="discord:abc")
    bot = SendWindow("all", limit=1, seconds=3.0)
    assert await windows.reserve([bot, SendWindow("c:1", 5, 5.0)]) == 0.0
    assert 1.0 < await windows.reserve([bot, SendWindow("c:2", 5, 5.0)]) <= 3.0
    ttl_ms = await redis.pttl(keys.pace("discord:abc", "c:2"))
    assert 0 < ttl_ms <= 8_000  # the booked slot (+3 s) plus its window


async def test_a_send_that_may_not_wait_books_nothing_when_the_window_is_full(
    redis: aioredis.Redis, keys: Keys
) -> None:
    windows = SendWindows(redis, keys=keys, owner="tg:1")
    chat = SendWindow("c:7", limit=1, seconds=10.0)
    assert await windows.reserve([chat], most_s=0.0) == 0.0
    assert await windows.reserve([chat], most_s=0.0) is None
    assert await redis.zcard(keys.pace("tg:1", "c:7")) == 1  # the refused one left no slot
    assert 8.0 < await windows.reserve([chat]) <= 10.0


async def test_a_hold_keeps_every_process_out_of_the_window_until_it_ends(
    redis: aioredis.Redis, keys: Keys
) -> None:
    first = SendWindows(redis, keys=keys, owner="tg:1")
    second = SendWindows(redis, keys=keys, owner="tg:1")
    group = SendWindow("c:-100", limit=20, seconds=60.0)
    await first.hold([group], 5.0)
    assert 3.0 < await second.reserve([group]) <= 5.0
    await first.hold([group], 1.0)  # a shorter hold never shortens a longer one
    assert await second.reserve([group], most_s=0.0) is None
    assert 0 < await redis.pttl(keys.pace("tg:1", "c:-100")) <= 65_000
