"""Conversation context on Telegram, end to end: the real aiogram client polls the fake Bot API,
the real manager on real Redis records what the group says and builds each turn, and the fake
OpenAI server records what the model was sent. Telegram has no history API: context is what a
reply carries (`reply_to_message`, `quote`, `external_reply`) and what the bot observed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.integration.channels.context_harness import context_lines, user_text
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
BOB = FakeTelegram.user(8, "Bob")
CARL = FakeTelegram.user(9, "Carl")
BOT = "@switchboard_test_bot"

Start = Callable[..., Awaitable[Manager]]


@pytest.fixture
async def start(
    fake: FakeTelegram, make_manager: Any, openai_server: FakeOpenAI
) -> AsyncIterator[Start]:
    adapters: list[TelegramAdapter] = []

    async def factory(**overrides: Any) -> Manager:
        manager = await make_manager(
            model="openai:gpt-4o-mini",
            openai_base_url=openai_server.base_url,
            openai_api_key=API_KEY,
            streaming="off",
            **overrides,
        )
        observe = overrides.get("telegram_observe", 50) > 0
        adapter = TelegramAdapter(
            token=TOKEN, deliver=manager.deliver, api_base=fake.base_url, observe=observe
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


async def answered(fake: FakeTelegram, manager: Manager, chat: int, count: int) -> None:
    await wait_until(lambda: len(fake.bot_texts(chat)) >= count)
    await manager.idle()


async def test_a_reply_to_an_earlier_message_shows_it_with_the_quoted_part(
    fake: FakeTelegram, start: Start, openai_server: FakeOpenAI
) -> None:
    manager = await start(telegram_observe=0)
    group = fake.group(-1001)
    earlier = fake.say(group, ANN, "We need a venue for the offsite, budget 2k.")["message"]
    fake.say(group, BOB, f"{BOT} any ideas?", reply_to=earlier, quote="budget 2k")
    await answered(fake, manager, group["id"], 1)

    assert context_lines(openai_server) == [
        "Ann (replied to; the reply quotes: “budget 2k”): We need a venue for the offsite, "
        "budget 2k."
    ]
    assert user_text(openai_server) == "any ideas?"


async def test_a_reply_to_another_chats_message_shows_its_sender_and_quote(
    fake: FakeTelegram, start: Start, openai_server: FakeOpenAI
) -> None:
    manager = await start(telegram_observe=0)
    chat = fake.dm(ANN)
    channel = {"id": -1009, "type": "channel", "title": "Company News"}
    origin = FakeTelegram.external(CARL, chat=channel, message_id=55)
    fake.say(chat, ANN, "is this true?", external_reply=origin, quote="Offices close on Friday")
    await answered(fake, manager, chat["id"], 1)
    assert context_lines(openai_server) == ["Carl (replied to): Offices close on Friday"]


async def test_observed_group_messages_are_shown_to_the_next_mention(
    fake: FakeTelegram, start: Start, openai_server: FakeOpenAI, redis: Any, prefix: str
) -> None:
    manager = await start(telegram_observe=3)
    group = fake.group(-1002)
    for user, text in (
        (ANN, "Lunch at noon?"),
        (BOB, "I'm in."),
        (CARL, "Noon is too early for me."),
        (ANN, "12:30 then."),
    ):
        fake.say(group, user, text)
    record = f"{prefix}observed:{{telegram:{group['id']}}}"
    await wait_until(lambda: _count(redis, record, 3))
    fake.say(group, BOB, f"{BOT} so when do we meet?")
    await answered(fake, manager, group["id"], 1)

    assert context_lines(openai_server) == [
        "Bob: I'm in.",
        "Carl: Noon is too early for me.",
        "Ann: 12:30 then.",
    ]  # the record keeps the newest three
    assert 0 < await redis.ttl(record) <= 48 * 3600


async def test_a_reply_to_the_bot_catches_up_on_what_the_group_said_since(
    fake: FakeTelegram, start: Start, openai_server: FakeOpenAI, redis: Any, prefix: str
) -> None:
    manager = await start()
    group = fake.group(-1003)
    record = f"{prefix}observed:{{telegram:{group['id']}}}"
    fake.say(group, ANN, "Old news nobody needs again.")
    await wait_until(lambda: _count(redis, record, 1))
    fake.say(group, ANN, f"{BOT} start a packing list")
    await answered(fake, manager, group["id"], 1)
    (bot_reply,) = fake.bot_messages(group["id"])
    fake.say(group, BOB, "Add sunscreen.")
    fake.say(group, CARL, "And a tent.")
    await wait_until(lambda: _count(redis, record, 4))  # the mention was recorded too
    fake.say(group, ANN, "what do we have so far?", reply_to=bot_reply)
    await answered(fake, manager, group["id"], 2)

    assert context_lines(openai_server) == ["Bob: Add sunscreen.", "Carl: And a tent."]
    assert context_lines(openai_server, 0) == ["Ann: Old news nobody needs again."]


async def test_with_observing_off_group_messages_not_for_the_bot_are_not_recorded(
    fake: FakeTelegram, start: Start, redis: Any, prefix: str
) -> None:
    manager = await start(telegram_observe=0)
    group = fake.group(-1004)
    fake.say(group, ANN, "just chatting")
    marker = fake.say(fake.dm(ANN), ANN, "hello")
    await answered(fake, manager, ANN["id"], 1)
    assert marker
    assert [k async for k in redis.scan_iter(match=f"{prefix}observed:*")] == []


async def _count(redis: Any, key: str, wanted: int) -> bool:
    return bool(await redis.zcard(key) >= wanted)
