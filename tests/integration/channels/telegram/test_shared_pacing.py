"""Telegram's send budget shared in Redis by two adapters (two processes of one bot) against one
fake Bot API: a 429 that one of them meets holds that chat for the other too."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from channels.message import InboundMessage, Platform, ReplyTarget
from channels.pacing import SharedTelegramPacer
from channels.render import render_chunks
from channels.telegram.adapter import LIMITS, TelegramAdapter
from storage import Keys, SendWindows
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")


@pytest.fixture
async def two(
    fake: FakeTelegram, redis: aioredis.Redis, keys: Keys
) -> AsyncIterator[tuple[TelegramAdapter, TelegramAdapter]]:
    async def deliver(msg: InboundMessage) -> None:
        return None

    adapters = [
        TelegramAdapter(
            token=TOKEN,
            deliver=deliver,
            api_base=fake.base_url,
            pacer=SharedTelegramPacer(SendWindows(redis, keys=keys, owner="tg:1")),
        )
        for _ in range(2)
    ]
    for adapter in adapters:
        await adapter.start(receive=False)
    try:
        yield adapters[0], adapters[1]
    finally:
        for adapter in adapters:
            await adapter.stop()


async def test_a_429_met_by_one_process_holds_the_chat_for_the_other(
    fake: FakeTelegram, two: tuple[TelegramAdapter, TelegramAdapter]
) -> None:
    first, second = two
    fake.say(fake.dm(ANN), ANN, "hi", push=False)
    target = ReplyTarget(platform=Platform.TELEGRAM, chat_id=str(ANN["id"]))
    fake.flood_next("sendMessage", retry_after=2)
    flooded = asyncio.create_task(first.send(target, render_chunks("one", LIMITS)))
    await wait_until(lambda: any(c.status == 429 for c in fake.calls))
    [met] = [c.at for c in fake.calls if c.status == 429]
    await second.send(target, render_chunks("two", LIMITS))
    await flooded

    sends = [c for c in fake.calls if c.method == "sendMessage"]
    assert [c.status for c in sends] == [429, 200, 200]  # the other process met no 429
    assert all(c.at - met >= 1.9 for c in sends[1:])  # both waited out the retry-after
    assert sorted(fake.bot_texts(ANN["id"])) == ["one", "two"]
