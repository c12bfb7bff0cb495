"""Conversation keys follow the table in `channels/message.py` and round-trip through the parser."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from channels.message import (
    ButtonPress,
    InboundMessage,
    Platform,
    conversation_key,
    parse_conversation_key,
)


def msg(platform: Platform, **kw: object) -> InboundMessage:
    base: dict[str, object] = {
        "workspace_id": "W",
        "chat_id": "C",
        "sender_id": "U",
        "sender_name": "u",
        "text": "hi",
        "provider_message_id": "M",
    }
    base.update(kw)
    return InboundMessage(platform=platform, **base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("message", "key"),
    [
        (msg(Platform.TELEGRAM, is_dm=True, chat_id="42"), "tg:42"),
        (msg(Platform.TELEGRAM, chat_id="-100", thread_anchor="7"), "tg:-100:m7"),
        (msg(Platform.TELEGRAM, chat_id="-100", provider_message_id="9"), "tg:-100:m9"),
        (msg(Platform.TELEGRAM, chat_id="-100", thread_anchor="3", is_topic=True), "tg:-100:t3"),
        (
            msg(Platform.SLACK, workspace_id="T1", chat_id="C1", thread_anchor="1.2"),
            "slack:T1:C1:1.2",
        ),
        (msg(Platform.SLACK, workspace_id="T1", chat_id="D1", is_dm=True), "slack:T1:D1"),
        (
            msg(Platform.SLACK, workspace_id="T1", chat_id="D1", is_dm=True, thread_anchor="5.5"),
            "slack:T1:D1:5.5",
        ),
        (msg(Platform.DISCORD, workspace_id="G1", chat_id="TH1"), "discord:G1:TH1"),
        (msg(Platform.DISCORD, is_dm=True, chat_id="DM1"), "discord:dm:DM1"),
        (msg(Platform.CONSOLE, chat_id="local", is_dm=True), "console:local"),
    ],
)
def test_conversation_key_follows_the_thread_table(message: InboundMessage, key: str) -> None:
    assert conversation_key(message) == key


def test_slack_workspaces_never_share_a_conversation() -> None:
    a = msg(Platform.SLACK, workspace_id="T1", chat_id="C1", thread_anchor="1.0")
    b = msg(Platform.SLACK, workspace_id="T2", chat_id="C1", thread_anchor="1.0")
    assert conversation_key(a) != conversation_key(b)


_ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=12)


@given(
    platform=st.sampled_from(list(Platform)),
    chat=_ident,
    workspace=_ident,
    anchor=st.none() | _ident,
    is_dm=st.booleans(),
)
def test_conversation_key_round_trips_to_its_platform(
    platform: Platform, chat: str, workspace: str, anchor: str | None, is_dm: bool
) -> None:
    key = conversation_key(
        msg(platform, chat_id=chat, workspace_id=workspace, thread_anchor=anchor, is_dm=is_dm)
    )
    ref = parse_conversation_key(key)
    assert ref.platform is platform
    assert chat in ref.parts


@pytest.mark.parametrize("bad", ["", "tg", "nope:1", "slack:"])
def test_parse_rejects_keys_no_adapter_makes(bad: str) -> None:
    with pytest.raises(ValueError, match="not a conversation key"):
        parse_conversation_key(bad)


def test_button_press_dedupes_on_its_interaction_not_the_question_message() -> None:
    press = msg(Platform.SLACK, button=ButtonPress("q1", 0, interaction_id="act-1"))
    plain = msg(Platform.SLACK)
    assert press.dedupe_ids != plain.dedupe_ids
    assert press.dedupe_ids[0] == "press:act-1"


def test_reply_target_replies_to_the_message_outside_dms() -> None:
    assert msg(Platform.TELEGRAM, chat_id="-1").target.reply_to_id == "M"
    assert msg(Platform.TELEGRAM, chat_id="1", is_dm=True).target.reply_to_id is None
