"""What a Telegram update carries as conversation context (pure, no sockets): the message a reply
points at with its quoted part, a reply to another chat's message, and group messages passed on
only to be observed."""

from __future__ import annotations

from typing import Any

import pytest

from channels.telegram import BotIdentity, to_inbound
from channels.telegram.inbound import OBSERVED_MAX_CHARS, to_observed
from switchboard.conversation import ContextMessage

__all__: list[str] = []

ME = BotIdentity(id=999, username="sb_bot")
ANN = {"id": 7, "is_bot": False, "first_name": "Ann", "last_name": "Lee"}
BOB = {"id": 8, "is_bot": False, "first_name": "Bob"}
OTHER_BOT = {"id": 5, "is_bot": True, "first_name": "CI"}
BOT_USER = {"id": 999, "is_bot": True, "first_name": "SB", "username": "sb_bot"}
DM = {"id": 7, "type": "private", "first_name": "Ann"}
GROUP = {"id": -100, "type": "supergroup", "title": "Team"}
FORUM = {"id": -200, "type": "supergroup", "title": "Forum", "is_forum": True}
MENTION = [{"type": "mention", "offset": 0, "length": 7}]


def update(text: str | None, *, chat: dict[str, Any] = GROUP, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"message_id": 50, "date": 1_700_000_050, "chat": chat, "from": BOB}
    if text is not None:
        message["text"] = text
    message.update(extra)
    return {"update_id": 1, "message": message}


EARLIER = {
    "message_id": 40,
    "date": 1_700_000_000,
    "chat": GROUP,
    "from": ANN,
    "text": "Venue ideas: the boathouse or the old mill.",
}


def test_a_reply_carries_the_replied_message_and_the_part_it_quotes() -> None:
    quote = {"text": "the old mill", "position": 30, "is_manual": True}
    msg = to_inbound(
        update("@sb_bot which?", entities=MENTION, reply_to_message=EARLIER, quote=quote), ME
    )
    assert msg is not None and msg.sent_at == 1_700_000_050
    assert msg.quoted == (
        ContextMessage(
            "40",
            "Ann Lee",
            1_700_000_000,
            "Venue ideas: the boathouse or the old mill.",
            replied_to=True,
            quote="the old mill",
        ),
    )


def test_a_reply_to_the_bot_is_marked_as_the_bots_own_words() -> None:
    mine = {**EARLIER, "from": BOT_USER, "text": "Here is the list."}
    msg = to_inbound(update("and the third?", reply_to_message=mine), ME)
    assert msg is not None and msg.reply_to_bot
    assert msg.quoted[0].is_self and msg.quoted[0].sender == "SB"


def test_a_reply_with_a_photo_names_the_file() -> None:
    photo = {
        **EARLIER,
        "text": None,
        "caption": "floor plan",
        "photo": [{"file_id": "p", "file_unique_id": "u", "width": 9, "height": 9}],
    }
    photo = {k: v for k, v in photo.items() if v is not None}
    msg = to_inbound(update("@sb_bot thoughts?", entities=MENTION, reply_to_message=photo), ME)
    assert msg is not None
    assert (msg.quoted[0].text, msg.quoted[0].attachments) == ("floor plan", ("photo.jpg",))


def test_a_reply_to_another_chats_message_carries_its_origin_and_quote() -> None:
    external = {
        "origin": {
            "type": "channel",
            "date": 1_699_999_000,
            "chat": {"id": -300, "type": "channel", "title": "Company News"},
            "message_id": 12,
        },
        "chat": {"id": -300, "type": "channel", "title": "Company News"},
        "message_id": 12,
    }
    quote = {"text": "Offices close on Friday", "position": 0}
    msg = to_inbound(update("is this true?", chat=DM, external_reply=external, quote=quote), ME)
    assert msg is not None
    assert msg.quoted == (
        ContextMessage(
            "ext:-300:12", "Company News", 1_699_999_000, "Offices close on Friday", replied_to=True
        ),
    )


def test_a_topic_messages_implicit_reply_to_the_topic_is_not_context() -> None:
    created = {
        "message_id": 3,
        "date": 1,
        "chat": FORUM,
        "from": ANN,
        "forum_topic_created": {"name": "T", "icon_color": 1},
    }
    msg = to_inbound(
        update(
            "@sb_bot hi",
            chat=FORUM,
            entities=MENTION,
            message_thread_id=3,
            is_topic_message=True,
            reply_to_message=created,
        ),
        ME,
    )
    assert msg is not None and msg.quoted == ()


def test_a_group_message_not_for_the_bot_is_passed_on_only_to_be_observed() -> None:
    msg = to_observed(update("Lunch at noon?"), ME)
    assert msg is not None and msg.observed
    assert (msg.chat_id, msg.sender_name, msg.text, msg.sent_at) == (
        "-100",
        "Bob",
        "Lunch at noon?",
        1_700_000_050,
    )
    assert to_inbound(update("Lunch at noon?"), ME) is None


def test_an_observed_topic_message_keeps_its_topic_and_long_text_is_cut() -> None:
    msg = to_observed(
        update("x" * 5000, chat=FORUM, message_thread_id=3, is_topic_message=True), ME
    )
    assert msg is not None and msg.is_topic and msg.thread_anchor == "3"
    assert len(msg.text) == OBSERVED_MAX_CHARS


@pytest.mark.parametrize(
    ("text", "extra"),
    [
        ("@sb_bot hello", {"entities": MENTION}),  # for the bot: delivered as a message
        ("/poll@OtherBot", {}),  # a command, ours or not
        ("hi", {"chat": DM}),  # a private chat is all for the bot
        ("deploy done", {"from": OTHER_BOT}),  # bots are not conversation
        (
            None,
            {
                "sticker": {
                    "file_id": "s",
                    "file_unique_id": "s",
                    "type": "regular",
                    "width": 1,
                    "height": 1,
                    "is_animated": False,
                    "is_video": False,
                }
            },
        ),
    ],
)
def test_what_is_never_observed(text: str | None, extra: dict[str, Any]) -> None:
    chat = extra.pop("chat", GROUP)
    data = update(text, chat=chat, **extra)
    assert to_observed(data, ME) is None
