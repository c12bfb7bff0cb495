"""Discord gateway payloads → decisions and `InboundMessage`s (pure; no sockets)."""

from __future__ import annotations

from typing import Any

import pytest

from channels.discord import INTENTS, LIMITS, is_for_bot, press_to_inbound, to_inbound
from channels.discord.events import (
    THREAD_NAME_MAX,
    BotIdentity,
    parse_custom_id,
    question_custom_id,
    strip_mention,
    thread_name,
)
from channels.message import Platform, conversation_key

ME = BotIdentity(id="900", name="switchboard")
GUILD = "100"
CHANNEL = "200"
ALICE = {"id": "300", "username": "alice", "global_name": "Alice", "bot": False}


def message(content: str, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "555",
        "channel_id": CHANNEL,
        "guild_id": GUILD,
        "author": ALICE,
        "content": content,
        "mentions": [],
        "type": 0,
        "member": {"nick": None, "roles": []},
    }
    data.update(extra)
    return {k: v for k, v in data.items() if v is not None}


def mention(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return message(f"<@{ME.id}> {text}", mentions=[{"id": ME.id, "bot": True}], **extra)


def test_limits_are_discords_2000_chars_with_buttons_edits_and_reactions() -> None:
    assert (LIMITS.max_len, LIMITS.len_unit, LIMITS.markup) == (2000, "chars", "discord")
    assert LIMITS.can_edit and LIMITS.buttons and LIMITS.reactions


def test_intents_are_guilds_messages_dms_and_message_content_only() -> None:
    enabled = {name for name, on in INTENTS if on}
    assert enabled == {"guilds", "guild_messages", "dm_messages", "message_content"}


def test_dm_is_for_bot_without_mention() -> None:
    assert is_for_bot(message("hi", guild_id=None, member=None), ME)


def test_guild_message_without_mention_is_ignored() -> None:
    assert not is_for_bot(message("hi everyone"), ME)


def test_guild_message_mentioning_bot_is_for_bot() -> None:
    assert is_for_bot(mention(), ME)


def test_nickname_mention_form_counts_even_without_mentions_array() -> None:
    assert is_for_bot(message(f"<@!{ME.id}> hi"), ME)


def test_message_in_bot_thread_is_for_bot_without_mention() -> None:
    assert is_for_bot(message("follow-up", channel_id="777"), ME, in_bot_thread=True)


@pytest.mark.parametrize(
    "payload",
    [
        mention(author={"id": "301", "username": "otherbot", "bot": True}),
        mention(author={"id": ME.id, "username": "switchboard", "bot": True}),
        mention(webhook_id="42"),
        message("hi", guild_id=None, member=None, author={"id": "301", "bot": True}),
    ],
    ids=["other-bot", "ourselves", "webhook", "bot-dm"],
)
def test_bot_authors_are_never_for_bot(payload: dict[str, Any]) -> None:
    assert not is_for_bot(payload, ME, in_bot_thread=True)


def test_system_messages_are_ignored() -> None:
    assert not is_for_bot(mention(type=18), ME)  # THREAD_CREATED


def test_mention_is_stripped_from_text_in_both_forms() -> None:
    assert strip_mention(f"<@{ME.id}>  what is  <@!{ME.id}> up", ME.id) == "what is up"
    assert strip_mention("<@123> keep others", ME.id) == "<@123> keep others"


def test_dm_becomes_one_conversation_per_dm_channel() -> None:
    msg = to_inbound(message("hi", guild_id=None, member=None, channel_id="4242"), ME)
    assert msg.is_dm and msg.workspace_id == "" and msg.chat_id == "4242"
    assert conversation_key(msg) == "discord:dm:4242"
    assert msg.target.reply_to_id is None


def test_mention_delivered_into_created_thread_keys_on_guild_and_thread() -> None:
    msg = to_inbound(mention("summarise this"), ME, chat_id="555")
    assert msg.platform is Platform.DISCORD
    assert (msg.workspace_id, msg.chat_id, msg.text) == (GUILD, "555", "summarise this")
    assert msg.mentions_bot and not msg.is_dm
    assert msg.provider_message_id == "555" and msg.event_ids == ()
    assert conversation_key(msg) == f"discord:{GUILD}:555"
    assert msg.handle is not None and msg.handle.channel_id == CHANNEL  # where it itself lives


def test_without_chat_override_the_message_stays_in_its_channel() -> None:
    msg = to_inbound(mention(), ME)
    assert msg.chat_id == CHANNEL and msg.target.reply_to_id == "555"


def test_sender_name_prefers_nick_then_global_name() -> None:
    assert to_inbound(mention(), ME).sender_name == "Alice"
    assert to_inbound(mention(member={"nick": "Ali"}), ME).sender_name == "Ali"


def test_reply_to_the_bot_is_recorded() -> None:
    payload = mention(
        type=19,
        message_reference={"message_id": "444", "channel_id": CHANNEL},
        referenced_message={"id": "444", "author": {"id": ME.id, "bot": True}},
    )
    msg = to_inbound(payload, ME)
    assert msg.reply_to_id == "444" and msg.reply_to_bot


def test_attachments_are_normalised() -> None:
    payload = mention(
        attachments=[
            {
                "filename": "a.png",
                "url": "https://x/a.png",
                "size": 10,
                "content_type": "image/png",
            },
            {"filename": "b.zip", "url": "https://x/b.zip", "size": 20},
        ]
    )
    kinds = [(a.kind, a.name, a.size) for a in to_inbound(payload, ME).attachments]
    assert kinds == [("image", "a.png", 10), ("file", "b.zip", 20)]
    refs = [(a.url, a.mime) for a in to_inbound(payload, ME).attachments]
    assert refs == [("https://x/a.png", "image/png"), ("https://x/b.zip", "")]


def test_thread_name_is_the_first_line_within_100_chars() -> None:
    assert thread_name("  what is\n\nthe plan") == "what is"
    long = "word " * 60
    name = thread_name(long)
    assert len(name) <= THREAD_NAME_MAX and name.endswith("…") and " wor…" not in name
    assert thread_name("") == "Switchboard"
    assert len(thread_name("x" * 500)) == THREAD_NAME_MAX


def test_custom_ids_round_trip_and_foreign_ids_are_rejected() -> None:
    assert parse_custom_id(question_custom_id("abc123", 2)) == ("abc123", 2)
    assert parse_custom_id("persistent_view:thing") is None
    assert parse_custom_id("q:abc:x") is None
    assert len(question_custom_id("q" * 32, 24)) <= 100


def press(custom_id: str = "q:qid1:1", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "8001",
        "type": 3,
        "token": "tok",
        "application_id": ME.id,
        "guild_id": GUILD,
        "channel_id": "555",
        "member": {"user": {"id": "301", "username": "bob", "global_name": "Bob"}, "nick": None},
        "data": {"custom_id": custom_id, "component_type": 2},
        "message": {"id": "7001", "channel_id": "555"},
    }
    data.update(extra)
    return {k: v for k, v in data.items() if v is not None}


def test_button_press_becomes_a_press_from_the_presser() -> None:
    msg = press_to_inbound(press())
    assert msg is not None and msg.button is not None
    assert (msg.button.question_id, msg.button.option_index) == ("qid1", 1)
    assert msg.button.interaction_id == "8001"
    assert (msg.sender_id, msg.sender_name) == ("301", "Bob")
    assert (msg.chat_id, msg.workspace_id, msg.provider_message_id) == ("555", GUILD, "7001")
    assert conversation_key(msg) == f"discord:{GUILD}:555"
    assert msg.dedupe_ids == ("press:8001",)


def test_button_press_in_dm_uses_user_field() -> None:
    payload = press(guild_id=None, member=None, user={"id": "300", "username": "alice"})
    msg = press_to_inbound(payload)
    assert msg is not None and msg.is_dm and msg.sender_id == "300"


def test_foreign_components_and_other_interactions_are_not_presses() -> None:
    assert press_to_inbound(press("someone_elses_button")) is None
    assert press_to_inbound(press(type=2)) is None
