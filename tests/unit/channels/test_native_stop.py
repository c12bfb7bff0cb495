"""Stop presses from each platform's payloads (pure parsers): each becomes `/stop` in the
conversation it was pressed in, naming who pressed and, for buttons, whose answer it was."""

from __future__ import annotations

from channels.discord.events import is_stop_custom_id, stop_custom_id, stop_to_inbound
from channels.slack.blocks import stop_blocks
from channels.slack.events import BotIdentity, stop_press
from channels.telegram.stop import stop_to_inbound as telegram_stop


def test_telegrams_stopped_generation_update_is_stop_in_that_private_chat() -> None:
    update = {
        "update_id": 9,
        "stopped_message_generation": {
            "chat": {"id": 7, "type": "private", "first_name": "Ann"},
            "draft_id": 55,
        },
    }
    msg = telegram_stop(update)
    assert msg is not None
    assert (msg.text, msg.chat_id, msg.sender_id, msg.is_dm) == ("/stop", "7", "7", True)
    assert msg.event_ids == ("u9",)
    group = {
        "update_id": 10,
        "stopped_message_generation": {"chat": {"id": -5, "type": "group"}, "draft_id": 1},
    }
    assert telegram_stop(group) is None  # drafts exist only in private chats


def test_a_discord_stop_press_is_the_pressers_stop_in_that_thread() -> None:
    custom_id = stop_custom_id()
    assert custom_id == "stop"  # names no one: a client may send any custom id
    assert is_stop_custom_id(custom_id) and is_stop_custom_id("stop:1200")  # an older build's
    assert not is_stop_custom_id("stopx") and not is_stop_custom_id("q:1:0")
    payload = {
        "id": "77",
        "type": 3,
        "guild_id": "G1",
        "channel_id": "T9",
        "channel": {"id": "T9", "type": 11},
        "application_id": "A1",
        "token": "tok",
        "data": {"custom_id": custom_id, "component_type": 2},
        "member": {"user": {"id": "1300", "username": "bob"}, "permissions": "32"},
    }
    msg = stop_to_inbound(payload)
    assert msg is not None and msg.native is not None
    assert msg.handle is not None and msg.handle.permissions == "32"  # for the admin check
    assert (msg.text, msg.sender_id, msg.chat_id, msg.native.place) == (
        "/stop",
        "1300",
        "T9",
        "thread",
    )


def test_a_slack_stop_press_names_the_presser_and_the_asker() -> None:
    (*_, actions) = stop_blocks("so far", "U1")
    button = actions["elements"][0]
    body = {
        "type": "block_actions",
        "user": {"id": "U2", "username": "bob"},
        "container": {"message_ts": "5.0", "channel_id": "C1", "thread_ts": "4.0"},
        "channel": {"id": "C1"},
        "actions": [
            {"action_id": button["action_id"], "value": button["value"], "action_ts": "6.1"}
        ],
    }
    pressed = stop_press(body, BotIdentity(user_id="UBOT", team_id="T1"))
    assert pressed is not None
    msg, asker = pressed
    assert asker == "U1" and msg.sender_id == "U2" and msg.text == "/stop"
    assert (msg.chat_id, msg.thread_anchor) == ("C1", "4.0")
