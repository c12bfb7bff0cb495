"""Streaming through the whole service (manager, agent, real aiogram adapter) on the fake Bot
API: drafts in private chats and edits in groups while the model writes, then the same final
text the non-streaming path sends; a question is never streamed; `off` sends one message."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx
import pytest

from service.app import running_service
from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.telegram_service import post_until_taken, settings_for
from tests.support import wait_until

pytestmark = pytest.mark.timeout(120)

ANN = FakeTelegram.user(7, "Ann")
WORDS = " ".join(f"w{i}" for i in range(1, 41))  # `drip 40`: 40 words, ~4 s of writing


async def _ask(fake: FakeTelegram, core, update: dict) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{core.http_port}") as http:
        await post_until_taken(http, update)


async def test_a_private_reply_is_drafted_while_written_then_sent_once(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook")
    async with running_service(settings) as core:
        await _ask(fake, core, fake.say(fake.dm(ANN), ANN, "drip 40", push=False))
        await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=30)
        await core.manager.idle()
    drafts = [c["text"] for c in fake.calls_to("sendMessageDraft", ok_only=True)]
    assert len(drafts) >= 2, drafts  # several partial updates before the final one
    assert all(WORDS.startswith(d.strip()) for d in drafts), drafts  # only what the model wrote
    assert fake.bot_texts(ANN["id"]) == [WORDS]  # one final message, the whole reply
    times = [c.at for c in fake.calls if c.method == "sendMessageDraft"]
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(times))  # ~1 per second


async def test_a_group_reply_is_edited_while_written_and_ends_on_the_final_text(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    group = fake.group(-100200, "Team")
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook")
    async with running_service(settings) as core:
        await _ask(fake, core, fake.say(group, ANN, "@switchboard_test_bot drip 40", push=False))
        await wait_until(lambda: fake.calls_to("editMessageText", ok_only=True), timeout=30)
        await core.manager.idle()
    sends = fake.calls_to("sendMessage", ok_only=True)
    edits = [c["text"] for c in fake.calls_to("editMessageText", ok_only=True)]
    assert len(sends) == 1 and len(edits) >= 2, (sends, edits)
    assert edits[-1] == WORDS and fake.bot_texts(group["id"]) == [WORDS]


async def test_a_question_is_sent_whole_with_its_buttons(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook")
    async with running_service(settings) as core:
        await _ask(fake, core, fake.say(fake.dm(ANN), ANN, "choose a colour", push=False))
        await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=30)
        await core.manager.idle()
    (question,) = fake.calls_to("sendMessage", ok_only=True)
    assert "Which one do you mean?" in question["text"] and question.get("reply_markup")
    assert not fake.calls_to("sendMessageDraft")


async def test_streaming_off_sends_one_message_and_no_drafts(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook", streaming="off")
    async with running_service(settings) as core:
        await _ask(fake, core, fake.say(fake.dm(ANN), ANN, "drip 20", push=False))
        await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=30)
        await core.manager.idle()
    assert not fake.calls_to("sendMessageDraft") and not fake.calls_to("editMessageText")
    assert fake.bot_texts(ANN["id"]) == [" ".join(f"w{i}" for i in range(1, 21))]


async def test_a_reply_written_at_once_is_just_sent_without_drafts(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook")
    async with running_service(settings) as core:
        await _ask(fake, core, fake.say(fake.dm(ANN), ANN, "echo quick one", push=False))
        await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=30)
        await core.manager.idle()
    assert not fake.calls_to("sendMessageDraft")  # nothing to stream before it was done
    assert fake.bot_texts(ANN["id"]) == ["quick one"]


async def test_after_fast_replies_a_worker_sends_a_slow_one_whole(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    """The stream policy: eight quick replies switch the model's per-token stream off, so the
    next slow reply is sent whole (typing meanwhile), while a fresh worker streams it."""
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook")
    users = [FakeTelegram.user(100 + n, f"User{n}") for n in range(9)]
    async with running_service(settings) as core:
        for user in users[:8]:
            await _ask(fake, core, fake.say(fake.dm(user), user, "echo quick", push=False))
            await wait_until(lambda user=user: fake.bot_texts(user["id"]), timeout=30)
        slow = users[8]
        await _ask(fake, core, fake.say(fake.dm(slow), slow, "drip 15", push=False))
        await wait_until(lambda: fake.bot_texts(slow["id"]), timeout=30)
        await core.manager.idle()
    assert not fake.calls_to("sendMessageDraft")
    assert fake.bot_texts(slow["id"]) == [" ".join(f"w{i}" for i in range(1, 16))]


async def test_beyond_max_streams_a_reply_is_sent_whole_while_the_others_stream(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    """Four slow replies at once with room for two streams: two are drafted, the other two are
    asked for whole (typing meanwhile); each chat gets its whole reply once."""
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook", max_streams=2)
    users = [FakeTelegram.user(300 + n, f"User{n}") for n in range(4)]
    async with running_service(settings) as core:
        for user in users:
            await _ask(fake, core, fake.say(fake.dm(user), user, "drip 30", push=False))
        for user in users:
            await wait_until(lambda user=user: fake.bot_texts(user["id"]), timeout=30)
        await core.manager.idle()
    drafted = {c["chat_id"] for c in fake.calls_to("sendMessageDraft", ok_only=True)}
    assert len(drafted) == 2, drafted
    typed = {c["chat_id"] for c in fake.calls_to("sendChatAction", ok_only=True)}
    assert {u["id"] for u in users} - drafted <= typed
    words = " ".join(f"w{i}" for i in range(1, 31))
    assert all(fake.bot_texts(u["id"]) == [words] for u in users)


async def test_an_interrupted_reply_keeps_what_was_shown_marked_and_answers_the_new_message(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    chat = fake.dm(ANN)
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook", busy="interrupt")
    async with running_service(settings) as core:
        await _ask(fake, core, fake.say(chat, ANN, "drip 40", push=False))
        await wait_until(lambda: fake.calls_to("sendMessageDraft", ok_only=True), timeout=30)
        await _ask(fake, core, fake.say(chat, ANN, "echo instead", push=False))
        await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 2, timeout=30)
        await core.manager.idle()
    partial, answer = fake.bot_texts(ANN["id"])
    assert partial.startswith("w1 ") and partial.endswith("(interrupted)"), partial
    assert WORDS not in partial  # cut short
    assert answer == "instead"
