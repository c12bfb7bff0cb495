"""Telegram update dicts → `InboundMessage` (pure functions, no sockets)."""

from __future__ import annotations

from typing import Any

import pytest
from aiogram.types import Message, Update

from channels.message import Platform, conversation_key
from channels.telegram import LIMITS, BotIdentity, is_for_bot, to_inbound
from channels.telegram.inbound import (
    _SERVICE_KINDS,
    callback_data,
    parse_callback_data,
    wants_text_notice,
)

ME = BotIdentity(id=999, username="sb_bot")
ANN = {"id": 7, "is_bot": False, "first_name": "Ann", "last_name": "Lee"}
BOB = {"id": 8, "is_bot": False, "first_name": "Bob"}
BOT_USER = {"id": 999, "is_bot": True, "first_name": "SB", "username": "sb_bot"}
DM = {"id": 7, "type": "private", "first_name": "Ann"}
GROUP = {"id": -100, "type": "supergroup", "title": "Team"}
FORUM = {"id": -200, "type": "supergroup", "title": "Forum", "is_forum": True}


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def message(
    text: str | None = "hi",
    *,
    chat: dict[str, Any] = DM,
    sender: dict[str, Any] = ANN,
    message_id: int = 50,
    entities: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {"message_id": message_id, "date": 1, "chat": chat, "from": sender}
    if text is not None:
        data["text"] = text
    if entities:
        data["entities"] = entities
    data.update(extra)
    return data


def mention(text: str, name: str = "@sb_bot") -> dict[str, Any]:
    offset = utf16(text[: text.index(name)])
    return {"type": "mention", "offset": offset, "length": utf16(name)}


def command(text: str) -> dict[str, Any]:
    return {"type": "bot_command", "offset": 0, "length": utf16(text.split()[0])}


def update(msg: dict[str, Any], update_id: int = 1) -> dict[str, Any]:
    return {"update_id": update_id, "message": msg}


def bot_message(message_id: int = 40, chat: dict[str, Any] = GROUP, **extra: Any) -> dict[str, Any]:
    return {
        "message_id": message_id,
        "date": 1,
        "chat": chat,
        "from": BOT_USER,
        "text": "ok",
    } | extra


def test_limits_are_telegrams_4096_utf16_units_in_html() -> None:
    assert (LIMITS.max_len, LIMITS.len_unit, LIMITS.markup) == (4096, "utf16", "telegram_html")
    assert LIMITS.can_edit and LIMITS.buttons and LIMITS.reactions


def test_private_message_is_one_conversation_per_chat() -> None:
    msg = to_inbound(update(message("hello there"), update_id=77), ME)
    assert msg is not None
    assert msg.platform is Platform.TELEGRAM
    assert msg.is_dm and msg.chat_id == "7" and msg.workspace_id == ""
    assert msg.sender_id == "7" and msg.sender_name == "Ann Lee"
    assert msg.text == "hello there"
    assert msg.provider_message_id == "50"
    assert msg.thread_anchor is None
    assert msg.event_ids == ("u77",)
    assert conversation_key(msg) == "tg:7"
    assert msg.dedupe_ids == ("7:50", "u77")


def test_group_message_without_mention_or_reply_is_not_for_the_bot() -> None:
    data = message("just chatting", chat=GROUP)
    assert not is_for_bot(data, ME)
    assert to_inbound(update(data), ME) is None


def test_group_mention_starts_a_chain_anchored_at_the_mentioning_message() -> None:
    text = "@sb_bot echo hi"
    msg = to_inbound(update(message(text, chat=GROUP, entities=[mention(text)])), ME)
    assert msg is not None
    assert msg.text == "echo hi"
    assert msg.mentions_bot and not msg.is_dm
    assert msg.workspace_id == "-100" and msg.chat_id == "-100"
    assert msg.thread_anchor == "50"
    assert conversation_key(msg) == "tg:-100:m50"
    assert msg.target.reply_to_id == "50"


def test_mention_in_the_middle_is_removed_without_leaving_a_double_space() -> None:
    text = "please @sb_bot tell me"
    msg = to_inbound(update(message(text, chat=GROUP, entities=[mention(text)])), ME)
    assert msg is not None and msg.text == "please tell me"


def test_mention_offsets_are_counted_in_utf16_units() -> None:
    text = "🙂🙂 hey @sb_bot what's up"
    msg = to_inbound(update(message(text, chat=GROUP, entities=[mention(text)])), ME)
    assert msg is not None and msg.text == "🙂🙂 hey what's up"


def test_leading_mention_with_punctuation_is_stripped() -> None:
    text = "@SB_Bot, summarise this"
    entity = mention(text, "@SB_Bot")
    msg = to_inbound(update(message(text, chat=GROUP, entities=[entity])), ME)
    assert msg is not None and msg.text == "summarise this"


def test_mention_of_another_bot_is_not_for_us() -> None:
    text = "@other_bot echo hi"
    data = message(text, chat=GROUP, entities=[mention(text, "@other_bot")])
    assert not is_for_bot(data, ME)


def test_text_mention_entity_with_our_id_counts_as_a_mention() -> None:
    text = "SB help me"
    entity = {"type": "text_mention", "offset": 0, "length": 2, "user": BOT_USER}
    msg = to_inbound(update(message(text, chat=GROUP, entities=[entity])), ME)
    assert msg is not None and msg.mentions_bot and msg.text == "help me"


def test_reply_to_the_bot_continues_that_bots_message_chain() -> None:
    data = message("and more?", chat=GROUP, reply_to_message=bot_message(40))
    msg = to_inbound(update(data), ME)
    assert msg is not None
    assert msg.reply_to_bot and msg.reply_to_id == "40"
    assert not msg.mentions_bot
    assert msg.thread_anchor == "40"


def test_reply_to_another_user_without_mention_is_ignored() -> None:
    other = message("earlier", chat=GROUP, sender=BOB, message_id=30)
    assert not is_for_bot(message("agree", chat=GROUP, reply_to_message=other), ME)


def test_command_addressed_to_another_bot_is_ignored_everywhere() -> None:
    for chat in (GROUP, DM):
        text = "/new@OtherBot"
        assert not is_for_bot(message(text, chat=chat, entities=[command(text)]), ME)


def test_command_addressed_to_us_loses_the_bot_name() -> None:
    text = "/new@sb_bot"
    msg = to_inbound(update(message(text, chat=GROUP, entities=[command(text)])), ME)
    assert msg is not None and msg.text == "/new" and msg.mentions_bot


def test_plain_known_command_in_a_group_is_for_us_but_unknown_one_is_not() -> None:
    link = "/link"
    assert is_for_bot(message(link, chat=GROUP, entities=[command(link)]), ME)
    weather = "/weather"
    assert not is_for_bot(message(weather, chat=GROUP, entities=[command(weather)]), ME)


def test_forum_topic_is_one_conversation_and_its_implicit_reply_is_not_a_reply() -> None:
    creation = {
        "message_id": 12,
        "date": 1,
        "chat": FORUM,
        "from": ANN,
        "message_thread_id": 12,
        "is_topic_message": True,
        "forum_topic_created": {"name": "Ops", "icon_color": 1},
    }
    text = "@sb_bot status of deploy"
    data = message(
        text,
        chat=FORUM,
        entities=[mention(text)],
        message_thread_id=12,
        is_topic_message=True,
        reply_to_message=creation,
    )
    msg = to_inbound(update(data), ME)
    assert msg is not None
    assert msg.is_topic and msg.thread_anchor == "12"
    assert msg.reply_to_id is None and not msg.reply_to_bot
    assert conversation_key(msg) == "tg:-200:t12"
    assert msg.target.is_topic and msg.target.thread_anchor == "12"


def test_topic_message_without_mention_or_reply_is_ignored() -> None:
    data = message("chatter", chat=FORUM, message_thread_id=12, is_topic_message=True)
    assert to_inbound(update(data), ME) is None


def test_reply_thread_id_outside_a_forum_is_not_a_topic() -> None:
    data = message("more", chat=GROUP, message_thread_id=40, reply_to_message=bot_message(40))
    msg = to_inbound(update(data), ME)
    assert msg is not None and not msg.is_topic and msg.thread_anchor == "40"


def test_caption_counts_as_text() -> None:
    caption = "@sb_bot what is this?"
    data = message(
        None,
        chat=GROUP,
        caption=caption,
        caption_entities=[mention(caption)],
        photo=[{"file_id": "f", "file_unique_id": "u", "width": 1, "height": 1, "file_size": 9}],
    )
    msg = to_inbound(update(data), ME)
    assert msg is not None and msg.text == "what is this?"
    assert [a.kind for a in msg.attachments] == ["image"]


def test_sticker_in_a_dm_gets_a_notice_and_no_message() -> None:
    sticker = {
        "file_id": "s",
        "file_unique_id": "su",
        "type": "regular",
        "width": 1,
        "height": 1,
        "is_animated": False,
        "is_video": False,
    }
    data = update(message(None, sticker=sticker))
    assert to_inbound(data, ME) is None
    assert wants_text_notice(data, ME)
    in_group = update(message(None, chat=GROUP, sticker=sticker, reply_to_message=bot_message()))
    assert to_inbound(in_group, ME) is None
    assert not wants_text_notice(in_group, ME)


def test_text_message_never_wants_the_notice() -> None:
    assert not wants_text_notice(update(message("hi")), ME)


def test_very_long_text_passes_through_untouched() -> None:
    text = "x" * 9000
    msg = to_inbound(update(message(text)), ME)
    assert msg is not None and msg.text == text


def test_messages_from_bots_including_ourselves_are_dropped() -> None:
    assert not is_for_bot(message("hi", sender={**BOB, "is_bot": True}), ME)
    assert not is_for_bot(message("hi", sender=BOT_USER), ME)


def test_aiogram_objects_are_accepted_as_well_as_dicts() -> None:
    data = message("hi")
    assert is_for_bot(Message.model_validate(data), ME)
    assert to_inbound(Update.model_validate(update(data)), ME) == to_inbound(update(data), ME)


def test_button_press_becomes_a_press_on_the_question_message() -> None:
    question = bot_message(60, chat=GROUP)
    data = {
        "update_id": 5,
        "callback_query": {
            "id": "cq1",
            "from": BOB,
            "chat_instance": "x",
            "message": question,
            "data": "q:AbC-12_xyz9:1",
        },
    }
    msg = to_inbound(data, ME)
    assert msg is not None and msg.button is not None
    assert (msg.button.question_id, msg.button.option_index) == ("AbC-12_xyz9", 1)
    assert msg.button.interaction_id == "cq1"
    assert msg.sender_id == "8" and msg.chat_id == "-100"
    assert msg.reply_to_id == "60" and msg.reply_to_bot
    assert msg.dedupe_ids == ("press:cq1", "u5")


def test_button_press_in_a_topic_keeps_the_topic() -> None:
    question = bot_message(61, chat=FORUM, message_thread_id=12, is_topic_message=True)
    data = {
        "update_id": 6,
        "callback_query": {
            "id": "cq2",
            "from": ANN,
            "chat_instance": "x",
            "message": question,
            "data": "q:abc:0",
        },
    }
    msg = to_inbound(data, ME)
    assert msg is not None and msg.is_topic and msg.thread_anchor == "12"


@pytest.mark.parametrize(
    "data",
    [
        None,
        "",
        "q:abc",
        "q::1",
        "q:abc:x",
        "q:abc:-1",
        "q:abc:100",
        "q:toolong_question:1",
        "x:a:1",
    ],
)
def test_garbage_callback_data_is_rejected(data: str | None) -> None:
    assert parse_callback_data(data) is None


def test_callback_data_round_trips_and_fits_64_bytes() -> None:
    data = callback_data("AbCdEfGhIjKl", 99)
    assert len(data.encode()) <= 64
    assert parse_callback_data(data) == ("AbCdEfGhIjKl", 99)
    with pytest.raises(ValueError):
        callback_data("has space", 0)


def test_photo_reference_is_the_largest_size_with_its_file_id() -> None:
    sizes = [
        {"file_id": "small", "file_unique_id": "u1", "width": 90, "height": 60, "file_size": 9},
        {"file_id": "big", "file_unique_id": "u2", "width": 1280, "height": 853, "file_size": 99},
    ]
    msg = to_inbound(update(message(None, caption="look", photo=sizes)), ME)
    assert msg is not None and msg.text == "look"
    (photo,) = msg.attachments
    assert (photo.kind, photo.file_id, photo.size, photo.mime) == ("image", "big", 99, "image/jpeg")
    assert photo.name == "photo.jpg"


def test_document_or_voice_alone_in_a_dm_is_delivered_without_a_notice() -> None:
    doc = {
        "file_id": "d1",
        "file_unique_id": "du",
        "file_name": "report.pdf",
        "mime_type": "application/pdf",
        "file_size": 1234,
    }
    data = update(message(None, document=doc))
    msg = to_inbound(data, ME)
    assert msg is not None and msg.text == "" and not wants_text_notice(data, ME)
    assert [(a.kind, a.name, a.mime, a.file_id, a.size) for a in msg.attachments] == [
        ("file", "report.pdf", "application/pdf", "d1", 1234)
    ]
    voice = {"file_id": "v1", "file_unique_id": "vu", "duration": 2, "mime_type": "audio/ogg"}
    msg = to_inbound(update(message(None, voice=voice)), ME)
    assert msg is not None and [(a.kind, a.name) for a in msg.attachments] == [
        ("audio", "voice.ogg")
    ]


def test_a_checklist_is_delivered_as_its_title_and_tasks() -> None:
    checklist = {
        "title": "Trip",
        "tasks": [
            {"id": 1, "text": "book the train", "completed_by_user": ANN, "completion_date": 5},
            {"id": 2, "text": "pack", "completion_date": 0},
        ],
    }
    data = update(message(None, checklist=checklist))
    msg = to_inbound(data, ME)
    assert msg is not None
    assert msg.text == "Checklist: Trip\n- [x] book the train\n- [ ] pack"
    assert not wants_text_notice(data, ME)


@pytest.mark.parametrize(
    "content",
    [
        {"live_photo": {"file_id": "l", "file_unique_id": "lu", "width": 1, "height": 1,
                        "duration": 1, "photo": []}},
        {"paid_media": {"star_count": 5, "paid_media": []}},
        {"dice": {"emoji": "🎲", "value": 3}},
        {"a_kind_from_a_newer_bot_api": {"x": 1}},
    ],
    ids=["live_photo", "paid_media", "dice", "unknown"],
)  # fmt: skip
def test_a_private_message_of_a_kind_we_cannot_read_gets_the_notice(
    content: dict[str, Any],
) -> None:
    data = update(message(None, **content))
    assert to_inbound(data, ME) is None
    assert wants_text_notice(data, ME)


def test_a_private_service_message_gets_no_notice() -> None:
    data = update(message(None, write_access_allowed={"from_request": True}))
    assert to_inbound(data, ME) is None
    assert not wants_text_notice(data, ME)


def test_every_content_type_aiogram_knows_is_either_content_or_a_named_service_kind() -> None:
    """An aiogram upgrade adds the Bot API's new kinds to `ContentType`: a new service kind must
    be named in `_SERVICE_KINDS` here (or it would be answered with the notice), and a name there
    that aiogram dropped is stale."""
    from aiogram.enums import ContentType

    known = {c.value for c in ContentType}
    content = {
        "unknown", "any", "text", "animation", "audio", "document", "live_photo", "paid_media",
        "photo", "sticker", "story", "video", "video_note", "voice", "checklist", "contact",
        "dice", "game", "poll", "venue", "location", "giveaway", "giveaway_winners",
        "rich_message",
    }  # fmt: skip
    assert known >= _SERVICE_KINDS
    assert known - _SERVICE_KINDS == content
