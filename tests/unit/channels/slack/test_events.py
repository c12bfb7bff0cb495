"""Slack payload dicts → `InboundMessage` (pure functions, no sockets)."""

from __future__ import annotations

from typing import Any

import pytest

from channels.message import Platform, conversation_key
from channels.slack import BotIdentity, is_for_bot, parse_button_value, to_inbound

ME = BotIdentity(user_id="UBOT", bot_id="BBOT", team_id="T1")


def event(**fields: Any) -> dict[str, Any]:
    base = {
        "type": "message",
        "user": "U1",
        "text": "hi",
        "ts": "100.1",
        "channel": "C1",
        "channel_type": "channel",
        "team": "T1",
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def callback(ev: dict[str, Any], event_id: str = "Ev1", team_id: str = "T1") -> dict[str, Any]:
    return {"type": "event_callback", "team_id": team_id, "event_id": event_id, "event": ev}


def test_app_mention_starts_a_thread_on_the_mentioning_message() -> None:
    msg = to_inbound(callback(event(type="app_mention", text="<@UBOT> echo hi")), ME)
    assert msg is not None
    assert msg.platform is Platform.SLACK
    assert msg.mentions_bot and not msg.is_dm
    assert msg.text == "echo hi"
    assert msg.thread_anchor == "100.1"
    assert msg.provider_message_id == "100.1"
    assert msg.event_ids == ("Ev1",)
    assert msg.workspace_id == "T1"
    assert conversation_key(msg) == "slack:T1:C1:100.1"
    assert msg.target.thread_anchor == "100.1"


def test_mention_inside_a_thread_keeps_the_thread_root_as_anchor() -> None:
    msg = to_inbound(callback(event(type="app_mention", text="<@UBOT> more", thread_ts="90.0")), ME)
    assert msg is not None and msg.thread_anchor == "90.0"


def test_message_twin_of_an_app_mention_is_the_same_message_for_dedupe() -> None:
    text = "<@UBOT> hello"
    mention = to_inbound(callback(event(type="app_mention", text=text), event_id="EvA"), ME)
    twin = to_inbound(callback(event(text=text), event_id="EvB"), ME)
    assert mention is not None and twin is not None
    assert mention.dedupe_ids[0] == twin.dedupe_ids[0] == "C1:100.1"
    assert conversation_key(mention) == conversation_key(twin)
    assert twin.mentions_bot and twin.text == mention.text == "hello"


def test_dm_is_delivered_without_thread_at_top_level() -> None:
    msg = to_inbound(callback(event(channel="D9", channel_type="im", text="hello")), ME)
    assert msg is not None
    assert msg.is_dm and msg.thread_anchor is None
    assert conversation_key(msg) == "slack:T1:D9"
    assert msg.target.reply_to_id is None


def test_dm_reply_in_a_thread_uses_that_thread() -> None:
    msg = to_inbound(
        callback(event(channel="D9", channel_type="im", thread_ts="50.0", ts="60.0")), ME
    )
    assert msg is not None and msg.is_dm
    assert msg.thread_anchor == "50.0"
    assert conversation_key(msg) == "slack:T1:D9:50.0"


def test_unmentioned_channel_thread_reply_is_delivered_for_the_manager_to_decide() -> None:
    msg = to_inbound(callback(event(thread_ts="90.0", ts="95.0", text="recall")), ME)
    assert msg is not None
    assert not msg.mentions_bot and not msg.is_dm
    assert msg.thread_anchor == "90.0"
    assert conversation_key(msg) == "slack:T1:C1:90.0"


def test_unmentioned_top_level_channel_message_is_not_for_the_bot() -> None:
    assert not is_for_bot(event(text="just chatting"), ME)
    assert to_inbound(callback(event(text="just chatting")), ME) is None


@pytest.mark.parametrize(
    "fields",
    [
        {"bot_id": "B2", "text": "<@UBOT> hi"},
        {"subtype": "bot_message", "bot_id": "B2", "user": None, "text": "<@UBOT> hi"},
        {"user": "UBOT", "thread_ts": "90.0"},
        {"bot_profile": {"id": "B3"}, "channel_type": "im"},
        {
            "user": "USLACKBOT",
            "channel": "D9",
            "channel_type": "im",
            "text": "You have been removed from #ops by <@U7>",
        },
    ],
    ids=["other_bot", "bot_message_subtype", "ourselves", "bot_profile_in_dm", "slackbot_dm"],
)
def test_bot_messages_are_ignored(fields: dict[str, Any]) -> None:
    assert not is_for_bot(event(**fields), ME)


@pytest.mark.parametrize(
    "subtype", ["message_changed", "message_deleted", "channel_join", "message_replied"]
)
def test_edits_deletions_and_other_subtypes_are_ignored(subtype: str) -> None:
    assert not is_for_bot(event(subtype=subtype, channel_type="im"), ME)


@pytest.mark.parametrize("subtype", ["file_share", "thread_broadcast"])
def test_subtypes_carrying_user_text_are_kept(subtype: str) -> None:
    assert is_for_bot(event(subtype=subtype, channel_type="im"), ME)


def test_file_share_becomes_attachments() -> None:
    files = [
        {"name": "cat.png", "mimetype": "image/png", "url_private": "https://f/1", "size": 10},
        {"name": "notes.txt", "mimetype": "text/plain", "size": 3},
    ]
    msg = to_inbound(
        callback(event(subtype="file_share", channel_type="im", files=files, text="look")), ME
    )
    assert msg is not None
    assert [(a.kind, a.name, a.size) for a in msg.attachments] == [
        ("image", "cat.png", 10),
        ("file", "notes.txt", 3),
    ]
    assert [(a.url, a.mime) for a in msg.attachments] == [
        ("https://f/1", "image/png"),
        ("", "text/plain"),
    ]


def test_slack_escapes_are_undone_and_mention_with_label_is_stripped() -> None:
    raw = "<@UBOT|switchboard> echo a &lt; b &amp;&amp; c &lt;!channel&gt; &amp;lt;"
    msg = to_inbound(callback(event(type="app_mention", text=raw)), ME)
    assert msg is not None
    assert msg.text == "echo a < b && c <!channel> &lt;"


def test_mention_in_the_middle_leaves_single_spaces() -> None:
    msg = to_inbound(callback(event(type="app_mention", text="hey <@UBOT> there")), ME)
    assert msg is not None and msg.text == "hey there"


def test_team_comes_from_the_event_when_the_body_has_none() -> None:
    body = callback(event(type="app_mention", team="T7"), team_id="")
    msg = to_inbound(body, ME)
    assert msg is not None and msg.workspace_id == "T7"


def test_display_name_is_taken_from_the_user_profile() -> None:
    profile = {"display_name": "", "real_name": "Ada Lovelace"}
    msg = to_inbound(callback(event(type="app_mention", user_profile=profile)), ME)
    assert msg is not None and msg.sender_name == "Ada Lovelace"


def test_non_message_events_are_ignored() -> None:
    assert to_inbound(callback({"type": "reaction_added", "user": "U1"}), ME) is None
    assert to_inbound({"type": "url_verification", "challenge": "x"}, ME) is None


def block_action(channel: str = "C1", thread_ts: str | None = "100.1") -> dict[str, Any]:
    container: dict[str, Any] = {"type": "message", "message_ts": "200.2", "channel_id": channel}
    if thread_ts:
        container["thread_ts"] = thread_ts
    return {
        "type": "block_actions",
        "user": {"id": "U2", "username": "bob", "team_id": "T1"},
        "team": {"id": "T1"},
        "channel": {"id": channel},
        "container": container,
        "trigger_id": "trig.1",
        "message": {"ts": "200.2", "thread_ts": thread_ts} if thread_ts else {"ts": "200.2"},
        "actions": [
            {
                "action_id": "q:abc123:2",
                "value": "q:abc123:2",
                "text": {"type": "plain_text", "text": "gamma"},
                "action_ts": "300.3",
            }
        ],
    }


def test_button_press_carries_question_option_and_interaction() -> None:
    msg = to_inbound(block_action(), ME)
    assert msg is not None and msg.button is not None
    assert (msg.button.question_id, msg.button.option_index) == ("abc123", 2)
    assert msg.button.interaction_id == "300.3"
    assert msg.sender_id == "U2" and msg.sender_name == "bob"
    assert msg.text == "gamma"
    assert msg.reply_to_id == "200.2" and msg.reply_to_bot
    assert msg.thread_anchor == "100.1"
    assert conversation_key(msg) == "slack:T1:C1:100.1"
    assert msg.dedupe_ids == ("press:300.3",)


def test_button_press_in_a_dm_maps_to_the_dm_conversation() -> None:
    msg = to_inbound(block_action(channel="D9", thread_ts=None), ME)
    assert msg is not None and msg.is_dm
    assert conversation_key(msg) == "slack:T1:D9"


def test_foreign_block_actions_are_ignored() -> None:
    body = block_action()
    body["actions"][0]["action_id"] = "other_button"
    assert to_inbound(body, ME) is None


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("q:abc:0", ("abc", 0)),
        ("q:a:b:12", ("a:b", 12)),
        ("q:abc:x", None),
        ("q::1", None),
        ("x:abc:1", None),
        ("q:abc", None),
    ],
)
def test_button_values_round_trip_only_for_our_shape(
    value: str, parsed: tuple[str, int] | None
) -> None:
    assert parse_button_value(value) == parsed
