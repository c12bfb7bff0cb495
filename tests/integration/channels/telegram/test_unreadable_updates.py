"""One update aiogram cannot validate must not stall the poll: the real aiogram dispatcher polls
the fake Bot API, whose batches carry an update of a shape aiogram refuses (a message without its
`chat`), between and after readable ones. Without the salvage in `PolledBatch`, aiogram fails the
whole batch and asks for the same offset again forever: nobody is answered."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
BOB = FakeTelegram.user(8, "Bob")
SECRET = "my card number is 4111"


@pytest.fixture
async def stack(fake: FakeTelegram, make_manager) -> AsyncIterator[Manager]:  # type: ignore[no-untyped-def]
    manager = await make_manager()
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        yield manager
    finally:
        await adapter.stop()


def unreadable(fake: FakeTelegram) -> dict[str, Any]:
    """A message update aiogram refuses: `chat` is required by the Bot API's Message."""
    return {
        "update_id": fake.next_update_id(),
        "message": {"message_id": 9, "date": 1_700_000_000, "from": BOB, "text": SECRET},
    }


def skipped(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "telegram.update_skipped"]


async def test_an_unreadable_update_between_readable_ones_is_skipped_and_the_others_answered(
    fake: FakeTelegram, stack: Manager, caplog: pytest.LogCaptureFixture
) -> None:
    await wait_until(lambda: fake.calls_to("getUpdates"))
    first = fake.say(fake.dm(ANN), ANN, "first", push=False)
    bad = unreadable(fake)
    last = fake.say(fake.dm(BOB), BOB, "last", push=False)
    with capture_logs() as logs, caplog.at_level(logging.ERROR, logger="aiogram"):
        fake.push_many([first, bad, last])
        await wait_until(lambda: fake.bot_texts(ANN["id"]) and fake.bot_texts(BOB["id"]))
        await stack.idle()
    assert fake.bot_texts(ANN["id"]) == ["You said: first"]
    assert fake.bot_texts(BOB["id"]) == ["You said: last"]
    (entry,) = skipped(logs)
    assert entry["update_id"] == bad["update_id"]
    assert entry["kind"] == "message"
    assert {"loc": "message.chat", "type": "missing"} in entry["errors"]
    assert SECRET not in repr(logs) and "4111" not in caplog.text
    assert "Failed to fetch updates" not in caplog.text  # aiogram never saw a failed batch


async def test_an_unreadable_last_update_is_not_fetched_again(
    fake: FakeTelegram, stack: Manager
) -> None:
    await wait_until(lambda: fake.calls_to("getUpdates"))
    good = fake.say(fake.dm(ANN), ANN, "before", push=False)
    bad = unreadable(fake)
    with capture_logs() as logs:
        fake.push_many([good, bad])
        await wait_until(lambda: fake.bot_texts(ANN["id"]))
        fake.say(fake.dm(ANN), ANN, "after")
        await wait_until(lambda: len(fake.bot_texts(ANN["id"])) == 2)
        await stack.idle()
    assert fake.bot_texts(ANN["id"]) == ["You said: before", "You said: after"]
    assert len(skipped(logs)) == 1  # once: the next poll's offset was past it
    offsets = [c.get("offset", 0) for c in fake.calls_to("getUpdates")]
    assert max(offsets) > bad["update_id"]


async def test_a_batch_of_only_unreadable_updates_moves_the_offset_past_them(
    fake: FakeTelegram, stack: Manager
) -> None:
    await wait_until(lambda: fake.calls_to("getUpdates"))
    bad = [unreadable(fake), unreadable(fake)]
    with capture_logs() as logs:
        fake.push_many(bad)
        await wait_until(lambda: len(skipped(logs)) == 2)
        fake.say(fake.dm(ANN), ANN, "still here?")
        await wait_until(lambda: fake.bot_texts(ANN["id"]))
        await stack.idle()
    assert fake.bot_texts(ANN["id"]) == ["You said: still here?"]
    assert [e["update_id"] for e in skipped(logs)] == [u["update_id"] for u in bad]
