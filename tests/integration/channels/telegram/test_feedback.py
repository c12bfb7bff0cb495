"""Telegram votes end to end: fake Bot API ⇄ real aiogram ⇄ TelegramAdapter ⇄ the real manager
(real Redis, demo model). Reactions reach a bot only when it asks for them; the asker's 👎 on
an answer is stored once and counted in `/metrics`, someone else's counts for nothing, and taking
the reaction back withdraws the vote."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from storage import FeedbackStore, Keys
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.integration.channels.metrics_probe import scrape
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
BOB = FakeTelegram.user(8, "Bob")
GROUP = -100555
DOWN = 'switchboard_feedback_total{platform="telegram",value="down"}'

Start = Callable[..., Awaitable[Manager]]


@pytest.fixture
async def start(fake: FakeTelegram, make_manager: Any) -> AsyncIterator[Start]:
    adapters: list[TelegramAdapter] = []

    async def factory(**overrides: Any) -> Manager:
        manager = await make_manager(streaming="off", **overrides)
        adapter = TelegramAdapter(
            token=TOKEN,
            deliver=manager.deliver,
            api_base=fake.base_url,
            votes=overrides.get("feedback", "on") == "on",
        )
        manager.register(adapter)
        await adapter.start()
        adapters.append(adapter)
        return manager

    try:
        yield factory
    finally:
        for adapter in adapters:
            await adapter.stop()


async def _answer_in_group(fake: FakeTelegram, manager: Manager) -> dict[str, Any]:
    fake.say(fake.group(GROUP), ANN, "@switchboard_test_bot hello")
    await wait_until(lambda: len(fake.bot_messages(GROUP)) >= 1)
    await manager.idle()
    return fake.bot_messages(GROUP)[-1]


async def _settled(fake: FakeTelegram, manager: Manager, update: dict[str, Any]) -> None:
    """Until the update was read (its offset confirmed) and the inbox is idle again."""
    await wait_until(
        lambda: any(
            c.method == "getUpdates" and c.params.get("offset", 0) > update["update_id"]
            for c in fake.calls
        )
    )
    await manager.idle()


async def test_the_askers_thumbs_down_is_stored_once_and_counted_in_metrics(
    fake: FakeTelegram, start: Start, redis: aioredis.Redis, keys: Keys
) -> None:
    manager = await start()
    answer = await _answer_in_group(fake, manager)
    assert fake.allowed_updates is not None and "message_reaction" in fake.allowed_updates
    votes = FeedbackStore(redis, keys=keys)
    before = await scrape(redis, keys, DOWN)

    await _settled(fake, manager, fake.react(BOB, answer, "👎"))  # not the asker
    assert await votes.recent() == []
    await _settled(fake, manager, fake.react(ANN, answer, "👎"))
    await _settled(fake, manager, fake.react(ANN, answer, "👎", was="👎"))  # no change: no vote

    (vote,) = await votes.recent()
    assert (vote.platform, vote.user_id, str(vote.value)) == ("telegram", "7", "down")
    assert vote.run_id and vote.thread_id and vote.message_id == str(answer["message_id"])
    assert await scrape(redis, keys, DOWN) == before + 1

    await _settled(fake, manager, fake.react(ANN, answer, None, was="👎"))
    assert await votes.recent() == []
    assert len(fake.bot_messages(GROUP)) == 1  # votes are never answered in the chat


async def test_with_feedback_off_the_bot_does_not_ask_for_reactions(
    fake: FakeTelegram, start: Start, redis: aioredis.Redis, keys: Keys
) -> None:
    manager = await start(feedback="off")
    answer = await _answer_in_group(fake, manager)
    assert "message_reaction" not in (fake.allowed_updates or [])
    fake.react(ANN, answer, "👎")
    fake.say(fake.group(GROUP), ANN, "@switchboard_test_bot echo after")
    await wait_until(lambda: len(fake.bot_messages(GROUP)) >= 2)
    await manager.idle()
    assert await FeedbackStore(redis, keys=keys).recent() == []
