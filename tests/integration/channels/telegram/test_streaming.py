"""Telegram streaming against the fake Bot API, driven by the real aiogram client: drafts in a
private chat, an edited message in groups and topics, paced, settling on exactly what `send`
would have sent."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from channels.adapter import Streams
from channels.message import Platform, ReplyTarget
from channels.render import render_chunks
from channels.telegram.adapter import LIMITS, TelegramAdapter
from channels.telegram.stream import EDIT_INTERVAL_S
from tests.fakes.telegram_server import TOKEN, FakeTelegram

ANN = FakeTelegram.user(7, "Ann")
GROUP_ID = -100123
REPLY = (
    "Here is **the answer** you asked for.\n\n```python\ndef double(x):\n    return x * 2\n```\n\n"
    "Use it _carefully_ — and see [the docs](https://example.com/docs)."
)


async def no_deliver(msg: object) -> None:
    raise AssertionError("nothing is received here")


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    adapter = TelegramAdapter(token=TOKEN, deliver=no_deliver, api_base=fake.base_url)
    await adapter.start(receive=False)
    try:
        yield adapter
    finally:
        await adapter.stop()


def dm_target(fake: FakeTelegram) -> ReplyTarget:
    fake.say(fake.dm(ANN), ANN, "hi", push=False)  # the user opened the chat
    return ReplyTarget(platform=Platform.TELEGRAM, chat_id=str(ANN["id"]))


def group_target(fake: FakeTelegram) -> ReplyTarget:
    asked = fake.say(fake.group(GROUP_ID), ANN, "@bot question", push=False)["message"]
    return ReplyTarget(
        platform=Platform.TELEGRAM, chat_id=str(GROUP_ID), reply_to_id=str(asked["message_id"])
    )


async def write(stream: object, text: str, pieces: int, pause: float) -> None:
    """Feed the reply's prefixes as a model would, `pieces` updates over its length."""
    for n in range(1, pieces + 1):
        await stream.update(text[: len(text) * n // pieces])  # type: ignore[attr-defined]
        await asyncio.sleep(pause)


def times(fake: FakeTelegram, method: str) -> list[float]:
    return [c.at for c in fake.calls if c.method == method and c.status == 200]


async def test_private_chat_streams_drafts_then_sends_the_reply_like_send(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    assert isinstance(adapter, Streams)
    target = dm_target(fake)
    stream = adapter.open_stream(target)
    await stream.status("Using current_time…")
    await asyncio.sleep(0.3)
    await write(stream, REPLY, pieces=12, pause=0.3)
    final = render_chunks(REPLY, LIMITS)
    sent = await stream.finish(final)

    drafts = fake.calls_to("sendMessageDraft", ok_only=True)
    assert len(drafts) >= 3  # several partial updates before the final one
    assert len({d["draft_id"] for d in drafts}) == 1 and drafts[0]["draft_id"] != 0
    assert "Using current_time" in drafts[0]["text"]
    assert all(c.status == 200 for c in fake.calls)  # no rejected call, partial markdown included
    paced = sorted(times(fake, "sendMessageDraft") + times(fake, "sendMessage"))
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(paced))  # 1/s per chat
    chat = ANN["id"]
    assert fake.drafts == {}  # the sent message replaced the draft
    assert len(sent.message_ids) == len(final)
    streamed = fake.calls_to("sendMessage")
    # exactly what the non-streaming path sends
    await adapter.send(target, final)
    again = fake.calls_to("sendMessage")[len(streamed) :]
    assert [(c["text"], c["parse_mode"]) for c in streamed] == [
        (c["text"], c["parse_mode"]) for c in again
    ]
    assert fake.bot_texts(chat)[-2] == fake.bot_texts(chat)[-1]


async def test_a_draft_yields_the_chats_budget_so_it_never_delays_the_reply(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    """A draft that would have to wait for the chat's slot is skipped, not queued: a queued
    draft would hold the slot the reply needs and push the reply a second later."""
    target = dm_target(fake)
    await adapter.send(target, render_chunks("an earlier reply", LIMITS))  # takes this second
    stream = adapter.open_stream(target)
    await stream.update("The answer is being writ")
    await asyncio.sleep(0.05)
    final = render_chunks("The answer is being written now.", LIMITS)
    await stream.finish(final)

    assert fake.calls_to("sendMessageDraft") == []  # there was no room for it: skipped
    first, reply = times(fake, "sendMessage")
    assert 0.9 <= reply - first < 1.5  # the reply took the next free slot, not the one after
    assert fake.bot_texts(ANN["id"])[-1] == "The answer is being written now."


async def test_group_streams_edits_paced_and_the_last_edit_is_the_final_text(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    target = group_target(fake)
    stream = adapter.open_stream(target)
    await write(stream, REPLY, pieces=10, pause=0.25)
    final = render_chunks(REPLY, LIMITS)
    sent = await stream.finish(final)

    assert fake.calls_to("sendMessageDraft") == []
    assert len(fake.calls_to("sendMessage")) == 1
    edits = fake.calls_to("editMessageText", ok_only=True)
    assert len(edits) >= 2
    assert edits[-1]["text"] == final[0].text and edits[-1]["parse_mode"] == "HTML"
    assert all(c.status == 200 for c in fake.calls)
    paced = sorted(times(fake, "sendMessage") + times(fake, "editMessageText"))
    assert all(b - a >= EDIT_INTERVAL_S - 0.1 for a, b in itertools.pairwise(paced))
    first = fake.calls_to("sendMessage")[0]
    assert first["reply_parameters"]["message_id"] == int(target.reply_to_id or 0)

    [shown] = fake.bot_texts(GROUP_ID)
    await adapter.send(target, final)
    assert fake.bot_texts(GROUP_ID) == [shown, shown]  # the same as the non-streaming send
    assert len(sent.message_ids) == 1


async def test_a_long_reply_continues_in_new_messages_without_breaking_code(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    target = group_target(fake)
    code = "\n".join(f"line_{n} = {n} * 2  # some commentary here" for n in range(220))
    reply = "Intro text.\n\n```python\n" + code + "\n```\n\nDone."
    stream = adapter.open_stream(target)
    await write(stream, reply, pieces=4, pause=0.3)
    final = render_chunks(reply, LIMITS)
    assert len(final) >= 3
    sent = await stream.finish(final)
    assert all(c.status == 200 for c in fake.calls)
    assert len(sent.message_ids) == len(final)
    streamed = fake.bot_texts(GROUP_ID)
    await adapter.send(target, final)  # the non-streaming path, for comparison
    assert fake.bot_texts(GROUP_ID) == streamed * 2
    assert all(t.count("line_") > 10 for t in streamed[1:-1])  # code continued, not broken


async def test_cancel_with_a_note_keeps_the_text_and_without_one_takes_it_back(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    target = group_target(fake)
    stream = adapter.open_stream(target)
    await stream.update("Partial **answer")
    await asyncio.sleep(0.2)
    kept = await stream.cancel("(stopped)")
    assert kept is not None
    assert fake.bot_texts(GROUP_ID) == ["Partial **answer\n\n(stopped)"]

    stream = adapter.open_stream(target)
    await stream.update("Another partial")
    await asyncio.sleep(0.2)
    assert await stream.cancel() is None
    assert fake.bot_texts(GROUP_ID) == ["Partial **answer\n\n(stopped)"]  # the partial is gone
    assert len(fake.calls_to("deleteMessage", ok_only=True)) == 1

    dm = dm_target(fake)
    stream = adapter.open_stream(dm)
    await stream.update("Draft only")
    await asyncio.sleep(0.2)
    assert await stream.cancel() is None
    assert fake.bot_texts(ANN["id"]) == []  # a draft just stops
    stream = adapter.open_stream(dm)
    await stream.update("Draft kept")
    await asyncio.sleep(0.2)
    assert await stream.cancel("(stopped)") is not None
    assert fake.bot_texts(ANN["id"]) == ["Draft kept\n\n(stopped)"]


async def test_rejected_entities_fall_back_to_plain_for_that_update_only(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    target = group_target(fake)
    stream = adapter.open_stream(target)
    fake.reject_entities_next("sendMessage")
    await stream.update("Some **bold** start")
    await asyncio.sleep(0.1)
    await stream.update("Some **bold** start and more")
    final = render_chunks("Some **bold** start and more, done.", LIMITS)
    await stream.finish(final)
    first, *rest = fake.calls_to("sendMessage")
    assert first["parse_mode"] == "HTML" and rest[0].get("parse_mode") is None
    assert fake.calls_to("editMessageText", ok_only=True)[-1]["text"] == final[0].text


async def test_a_flood_wait_slows_the_stream_and_the_final_text_still_lands(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    target = group_target(fake)
    stream = adapter.open_stream(target)
    await stream.update("Start")
    await asyncio.sleep(0.1)
    fake.flood_next("editMessageText", retry_after=1, times=2)
    await write(stream, "Start and then a lot more words", pieces=3, pause=0.2)
    final = render_chunks("Start and then a lot more words, finished.", LIMITS)
    await stream.finish(final)
    assert fake.bot_texts(GROUP_ID) == [final[0].plain]
    assert len([c for c in fake.calls if c.status == 429]) == 2
