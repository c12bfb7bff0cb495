"""Telegram's own Stop button end to end: fake Bot API ⇄ real aiogram ⇄ TelegramAdapter ⇄ the
real manager (real Redis, demo model, streaming on). Drafts carry `can_stop` and
`keep_on_stop`; pressing Stop stops the run as `/stop` does: the text shown so far is kept as
a message, marked stopped, and the rest is never written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")


@pytest.fixture
async def manager(fake: FakeTelegram, make_manager: Any) -> AsyncIterator[Manager]:
    manager = await make_manager(streaming="on")
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        yield manager
    finally:
        await adapter.stop()


async def test_the_draft_stop_button_stops_the_run_and_keeps_the_partial_text(
    fake: FakeTelegram, manager: Manager
) -> None:
    fake.say(fake.dm(ANN), ANN, "drip 100")  # a word every 0.1 s: about ten seconds
    await wait_until(lambda: any(len(text.split()) >= 3 for text in fake.drafts.values()))
    assert fake.allowed_updates is not None
    assert "stopped_message_generation" in fake.allowed_updates
    (key,) = fake.drafts
    assert fake.draft_params[key] == {"can_stop": True, "keep_on_stop": True}

    fake.press_stop(ANN["id"], key[1])
    await wait_until(lambda: any("(stopped)" in t for t in fake.bot_texts(ANN["id"])))
    await manager.idle()
    texts = fake.bot_texts(ANN["id"])
    (kept,) = [t for t in texts if "(stopped)" in t]
    words = kept.replace("(stopped)", "").split()
    assert words[:3] == ["w1", "w2", "w3"] and "w100" not in words
    assert "Stopping the current answer." in texts  # what /stop says
    assert not any("w100" in t for t in texts)
