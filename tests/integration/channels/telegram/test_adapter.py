"""Telegram end to end: the real aiogram client polling a fake Bot API, the real manager on real
Redis, the demo model. Each test reads what a Telegram user would see in the fake's chats."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.demo import GREETING, DemoChatModel
from channels.adapter import UNSUPPORTED_TEXT, AckKind
from channels.manager import Manager
from channels.message import InboundMessage
from channels.telegram.adapter import (
    QUEUED_TEXT,
    STALE_BUTTON_TEXT,
    BotIdentity,
    TelegramAdapter,
    to_inbound,
)
from switchboard.errors import PlatformAuthError
from tests.fakes.telegram_server import TOKEN, FakeTelegram, utf16_len
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
BOB = FakeTelegram.user(8, "Bob")
GROUP_ID = -100123
FORUM_ID = -100456


@pytest.fixture
async def stack(fake: FakeTelegram, make_manager) -> AsyncIterator[tuple[Manager, TelegramAdapter]]:  # type: ignore[no-untyped-def]
    manager = await make_manager()
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        yield manager, adapter
    finally:
        await adapter.stop()


def mention(fake: FakeTelegram, text: str) -> str:
    return f"@{fake.username} {text}"


async def replies(fake: FakeTelegram, manager: Manager, chat_id: int, count: int) -> list[str]:
    """Wait for `count` bot messages in the chat and for the manager to go quiet."""
    await wait_until(lambda: len(fake.bot_texts(chat_id)) >= count)
    await manager.idle()
    return fake.bot_texts(chat_id)


async def test_start_registers_commands_and_polls_after_deleting_the_webhook(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    _, adapter = stack
    assert adapter.identity == BotIdentity(id=fake.bot_id, username=fake.username)
    private = fake.calls_to("setMyCommands")[0]
    assert private["scope"] == {"type": "all_private_chats"}
    assert [c["command"] for c in private["commands"]] == [
        "help", "new", "status", "stop", "queue", "usage", "link", "unlink"
    ]  # fmt: skip
    await wait_until(lambda: fake.calls_to("getUpdates"))
    methods = [c.method for c in fake.calls]
    assert methods.index("deleteWebhook") < methods.index("getUpdates")
    assert set(fake.calls_to("getUpdates")[0]["allowed_updates"]) == {
        "message",
        "callback_query",
        "stopped_message_generation",
    }


async def test_private_chat_is_one_conversation(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    chat = fake.dm(ANN)
    fake.say(chat, ANN, "my name is Ann")
    await replies(fake, manager, ANN["id"], 1)
    fake.say(chat, ANN, "recall")
    texts = await replies(fake, manager, ANN["id"], 2)
    assert texts == ["You said: my name is Ann", "You first said: my name is Ann"]
    assert all("reply_parameters" not in p for p in fake.calls_to("sendMessage"))


async def test_group_answers_only_a_mention_and_replies_to_it(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    group = fake.group(GROUP_ID)
    fake.say(group, ANN, "just chatting among ourselves")
    fake.say(group, BOB, "/weather@OtherBot")
    asked = fake.say(group, ANN, mention(fake, "hello"))["message"]
    assert await replies(fake, manager, GROUP_ID, 1) == [GREETING]
    (reply,) = fake.bot_messages(GROUP_ID)
    assert reply["reply_to_message"]["message_id"] == asked["message_id"]


async def test_reply_chain_continues_including_a_reply_to_the_bots_second_message(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    group = fake.group(GROUP_ID)
    fake.say(group, ANN, mention(fake, "my name is Zed"))
    await replies(fake, manager, GROUP_ID, 1)
    first = fake.bot_messages(GROUP_ID)[0]
    fake.say(group, ANN, "still with me?", reply_to=first)
    await replies(fake, manager, GROUP_ID, 2)
    second = fake.bot_messages(GROUP_ID)[1]
    fake.say(group, BOB, "recall", reply_to=second)
    fake.say(group, BOB, mention(fake, "recall"))  # a fresh mention starts its own chain
    texts = await replies(fake, manager, GROUP_ID, 4)
    assert texts[:2] == ["You said: my name is Zed", "You said: still with me?"]
    assert sorted(texts[2:]) == ["You first said: my name is Zed", "You first said: recall"]


async def test_forum_topic_is_one_conversation_and_replies_stay_in_the_topic(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    forum = fake.group(FORUM_ID, "Forum", forum=True)
    topic = fake.create_topic(forum, "Ops")
    fake.say(forum, ANN, mention(fake, "my name is Ada"), topic=topic)
    await replies(fake, manager, FORUM_ID, 1)
    fake.say(forum, BOB, mention(fake, "recall"), topic=topic)
    texts = await replies(fake, manager, FORUM_ID, 2)
    assert texts == ["You said: my name is Ada", "You first said: my name is Ada"]
    assert all(m["message_thread_id"] == topic for m in fake.bot_messages(FORUM_ID))
    assert all(p["message_thread_id"] == topic for p in fake.calls_to("sendMessage"))


async def test_long_answer_arrives_in_chunks_within_4096_that_join_back(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, "long 9000")
    texts = await replies(fake, manager, ANN["id"], 1)
    expected = (await DemoChatModel().ainvoke("long 9000")).content
    assert isinstance(expected, str) and len(expected) == 9000
    assert len(texts) >= 3
    assert all(utf16_len(t) <= 4096 for t in texts)
    assert re.sub(r"\s+", "", "".join(texts)) == re.sub(r"\s+", "", expected)


async def test_user_html_is_shown_literally(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, "echo <b>x</b> & y")
    assert await replies(fake, manager, ANN["id"], 1) == ["<b>x</b> & y"]
    (sent,) = fake.calls_to("sendMessage")
    assert sent["parse_mode"] == "HTML"
    assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in sent["text"]


async def test_rejected_entities_are_resent_as_plain_text(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.reject_entities_next("sendMessage")
    fake.say(fake.dm(ANN), ANN, "echo **bold** words")
    assert await replies(fake, manager, ANN["id"], 1) == ["bold words"]
    rejected, plain = fake.calls_to("sendMessage")
    assert rejected["parse_mode"] == "HTML" and "<b>bold</b>" in rejected["text"]
    assert "parse_mode" not in plain and plain["text"] == "bold words"


async def test_redelivered_message_gets_one_reply(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    update = fake.say(fake.dm(ANN), ANN, "hello")
    fake.push({**update, "update_id": fake.next_update_id()})  # same message, new update id
    await replies(fake, manager, ANN["id"], 1)
    fake.say(fake.dm(ANN), ANN, "echo after")
    texts = await replies(fake, manager, ANN["id"], 2)
    assert texts == [GREETING, "after"]


async def test_flood_wait_is_honoured_without_a_duplicate(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.flood_next("sendMessage", retry_after=1)
    fake.say(fake.dm(ANN), ANN, "hello")
    assert await replies(fake, manager, ANN["id"], 1) == [GREETING]
    statuses = [c.status for c in fake.calls if c.method == "sendMessage"]
    assert statuses == [429, 200]


async def test_flood_waits_in_a_row_are_each_honoured_up_to_the_last_attempt(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.flood_next("sendMessage", retry_after=1, times=3)
    fake.say(fake.dm(ANN), ANN, "hello")
    assert await replies(fake, manager, ANN["id"], 1) == [GREETING]
    statuses = [c.status for c in fake.calls if c.method == "sendMessage"]
    assert statuses == [429, 429, 429, 200]  # the fourth attempt is the last one


async def test_a_polled_batch_is_appended_together_before_the_offset_that_confirms_it(
    fake: FakeTelegram,
    make_manager,  # type: ignore[no-untyped-def]
) -> None:
    manager = await make_manager()
    taken: dict[str, float] = {}  # message text -> when its append returned
    started: list[float] = []  # when each append began

    async def deliver(msg: InboundMessage) -> None:
        started.append(time.monotonic())
        await manager.deliver(msg)
        taken[msg.text] = time.monotonic()

    adapter = TelegramAdapter(token=TOKEN, deliver=deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        people = [FakeTelegram.user(100 + i, f"U{i}") for i in range(20)]
        batch = [fake.say(fake.dm(u), u, f"hello {i}", push=False) for i, u in enumerate(people)]
        fake.push_many(batch)
        await wait_until(lambda: len(taken) == 20)
        await wait_until(lambda: all(len(fake.bot_texts(u["id"])) == 1 for u in people))
    finally:
        await adapter.stop()
    assert max(started) < min(taken.values())  # all handed to Redis before any returned
    ids = [u["update_id"] for u in batch]
    confirming = [
        c for c in fake.calls if c.method == "getUpdates" and c.params.get("offset", 0) > min(ids)
    ]
    assert confirming  # the batch was confirmed ...
    first = min(c.at for c in confirming)
    assert all(taken[f"hello {i}"] <= first for i in range(20))  # ... only once all were in


async def test_button_clarification_refuses_a_stranger_and_resumes_for_the_asker(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    group = fake.group(GROUP_ID)
    fake.say(group, ANN, mention(fake, "choose"))
    await replies(fake, manager, GROUP_ID, 1)
    question = fake.bot_messages(GROUP_ID)[-1]
    keyboard = question["reply_markup"]["inline_keyboard"]
    assert [[b["text"] for b in row] for row in keyboard] == [["alpha"], ["beta"], ["gamma"]]
    beta = keyboard[1][0]["callback_data"]

    fake.press(BOB, question, beta)
    fake.press(BOB, question, "q:../etc:1")  # forged data
    await wait_until(lambda: len(fake.calls_to("answerCallbackQuery")) == 2)
    await manager.idle()
    refused, forged = sorted(fake.calls_to("answerCallbackQuery"), key=lambda p: p["text"])
    assert refused["text"].startswith("Only the person who asked") and refused["show_alert"]
    assert forged["text"] == STALE_BUTTON_TEXT
    still_open = fake.messages[(GROUP_ID, question["message_id"])]
    assert "reply_markup" in still_open

    fake.press(ANN, question, beta)
    await wait_until(lambda: any("You chose: beta" in t for t in fake.bot_texts(GROUP_ID)))
    await manager.idle()
    answered = fake.messages[(GROUP_ID, question["message_id"])]
    assert answered["text"].endswith("✅ beta") and "reply_markup" not in answered
    assert "text" not in fake.calls_to("answerCallbackQuery")[-1]


async def test_a_typed_answer_by_someone_else_in_a_group_leaves_the_question_to_its_asker(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    group = fake.group(GROUP_ID)
    fake.say(group, ANN, mention(fake, "choose"))
    await replies(fake, manager, GROUP_ID, 1)
    question = fake.bot_messages(GROUP_ID)[-1]
    fake.say(group, BOB, "2", reply_to=question)  # the same reply chain, not Ann's answer
    texts = await replies(fake, manager, GROUP_ID, 2)
    assert "for the person I asked" in texts[-1]
    assert "reply_markup" in fake.messages[(GROUP_ID, question["message_id"])]  # still open
    fake.say(group, ANN, "2", reply_to=question)
    texts = await replies(fake, manager, GROUP_ID, 3)
    assert texts[-1] == "You chose: beta."
    assert not any("You chose" in t for t in texts[:-1])


async def test_typed_answer_resolves_the_question_and_edits_away_its_buttons(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    chat = fake.dm(ANN)
    fake.say(chat, ANN, "choose")
    await replies(fake, manager, ANN["id"], 1)
    question = fake.bot_messages(ANN["id"])[0]
    fake.say(chat, ANN, "2")
    texts = await replies(fake, manager, ANN["id"], 2)
    assert texts[-1] == "You chose: beta."
    answered = fake.messages[(ANN["id"], question["message_id"])]
    assert answered["text"].endswith("✅ beta") and "reply_markup" not in answered


async def test_user_message_longer_than_4096_is_read_whole(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    words = " ".join(f"w{i}" for i in range(1500))
    assert len(words) > 4096
    fake.say(fake.dm(ANN), ANN, f"echo {words}")
    texts = await replies(fake, manager, ANN["id"], 2)
    assert all(utf16_len(t) <= 4096 for t in texts)
    assert " ".join(" ".join(texts).split()) == words


async def test_busy_thread_gets_a_reaction_and_typing_while_the_turn_runs(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    chat = fake.dm(ANN)
    fake.say(chat, ANN, "slow 1.5")
    await wait_until(lambda: fake.calls_to("sendChatAction"))  # the turn is running
    waiting = fake.say(chat, ANN, "echo queued one")["message"]
    texts = await replies(fake, manager, ANN["id"], 2)
    assert texts == ["Done after 1.5 s.", "queued one"]
    (reaction,) = fake.calls_to("setMessageReaction")
    assert reaction["message_id"] == waiting["message_id"]
    assert reaction["reaction"] == [{"type": "emoji", "emoji": "👀"}]
    actions = fake.calls_to("sendChatAction")
    assert actions and all(a["action"] == "typing" for a in actions)


async def test_unsupported_content_gets_a_notice_in_dms_and_silence_in_groups(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, sticker=True)
    assert await replies(fake, manager, ANN["id"], 1) == [UNSUPPORTED_TEXT]
    group = fake.group(GROUP_ID)
    fake.say(group, ANN, sticker=True)
    fake.say(group, ANN, caption=mention(fake, "echo from a caption"))
    assert await replies(fake, manager, GROUP_ID, 1) == ["from a caption"]


# -- adapter methods called directly ---------------------------------------------------------


def inbound(fake: FakeTelegram, adapter: TelegramAdapter, update: dict[str, Any]):  # type: ignore[no-untyped-def]
    assert adapter.identity is not None
    msg = to_inbound(update, adapter.identity)
    assert msg is not None
    return msg


async def test_queued_ack_falls_back_to_a_reply_when_reactions_fail(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    _, adapter = stack
    fake.reactions_allowed = False
    group = fake.group(GROUP_ID)
    update = fake.say(group, ANN, mention(fake, "hi"), push=False)
    await adapter.acknowledge(inbound(fake, adapter, update), AckKind.QUEUED)
    (notice,) = fake.bot_messages(GROUP_ID)
    assert notice["text"] == QUEUED_TEXT
    assert notice["reply_to_message"]["message_id"] == update["message"]["message_id"]


async def test_private_notice_goes_to_dm_and_never_to_the_group(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    _, adapter = stack
    group = fake.group(GROUP_ID)
    fake.say(fake.dm(ANN), ANN, "/start", push=False)  # Ann has opened a DM with the bot
    from_ann = inbound(fake, adapter, fake.say(group, ANN, mention(fake, "/link"), push=False))
    from_bob = inbound(fake, adapter, fake.say(group, BOB, mention(fake, "/link"), push=False))
    assert await adapter.notify(from_ann, "secret link for Ann", private=True)
    assert not await adapter.notify(from_bob, "link for <Bob> & co", private=True)
    assert fake.bot_texts(ANN["id"]) == ["secret link for Ann"]
    (told,) = fake.bot_messages(GROUP_ID)
    assert told["text"] == (
        f"Bob, I couldn't message you privately: open a chat with me (t.me/{fake.username}) "
        "and press Start, then ask me here again."
    )
    assert told["reply_to_message"]["message_id"] == int(from_bob.provider_message_id)


async def test_workspace_admin_is_read_from_chat_membership(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    _, adapter = stack
    group = fake.group(GROUP_ID)
    fake.admins[GROUP_ID].add(ANN["id"])
    from_ann = inbound(fake, adapter, fake.say(group, ANN, mention(fake, "x"), push=False))
    from_bob = inbound(fake, adapter, fake.say(group, BOB, mention(fake, "x"), push=False))
    assert await adapter.is_workspace_admin(from_ann)
    assert not await adapter.is_workspace_admin(from_bob)


async def test_typing_in_a_topic_names_the_topic(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    _, adapter = stack
    forum = fake.group(FORUM_ID, forum=True)
    topic = fake.create_topic(forum)
    msg = inbound(fake, adapter, fake.say(forum, ANN, mention(fake, "x"), topic=topic, push=False))
    async with adapter.typing(msg.target):
        await wait_until(lambda: fake.calls_to("sendChatAction"))
    (action,) = fake.calls_to("sendChatAction")
    assert action == {"chat_id": FORUM_ID, "action": "typing", "message_thread_id": topic}


async def test_wrong_token_is_an_auth_error_that_does_not_show_the_token(
    fake: FakeTelegram, make_manager
) -> None:  # type: ignore[no-untyped-def]
    manager = await make_manager()
    token = "42:not-the-right-token"
    adapter = TelegramAdapter(token=token, deliver=manager.deliver, api_base=fake.base_url)
    with pytest.raises(PlatformAuthError) as caught:
        await adapter.start()
    assert token not in str(caught.value) and "not-the-right" not in repr(caught.value)
    await adapter.stop()
    await adapter.stop()
