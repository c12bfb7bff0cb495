"""Slack slash-command payloads → native commands (pure, on the form fields Slack sends)."""

from __future__ import annotations

from typing import Any

from channels.slack.events import BotIdentity, slash_to_inbound

ME = BotIdentity(user_id="UBOT", bot_id="BBOT", team_id="T1")


def payload(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "team_id": "T1",
        "channel_id": "C1",
        "channel_name": "general",
        "user_id": "U1",
        "user_name": "alice",
        "command": "/switchboard",
        "text": text,
        "response_url": "https://hooks.slack.com/commands/T1/1/abc",
        "trigger_id": "1.2.abc",
        **fields,
    }


def test_first_word_is_the_command_and_the_rest_its_arguments() -> None:
    msg = slash_to_inbound(payload("link  Acme Corp"), ME, command="/switchboard")
    assert msg is not None and msg.text == "/link Acme Corp"
    assert msg.native is not None and msg.native.name == "link" and msg.native.private
    assert msg.native.place == "group" and not msg.is_dm
    assert msg.provider_message_id == "1.2.abc" and msg.workspace_id == "T1"


def test_in_a_dm_the_place_is_the_dm_and_stop_is_answered_in_the_open() -> None:
    msg = slash_to_inbound(
        payload("stop", channel_id="D9", channel_name="directmessage"), ME, command="/switchboard"
    )
    assert msg is not None and msg.is_dm and msg.native is not None
    assert msg.native.place == "dm" and not msg.native.private


def test_the_bare_command_is_help_and_an_unknown_word_stays_private() -> None:
    bare = slash_to_inbound(payload("  "), ME, command="/switchboard")
    assert bare is not None and bare.text == "/help"
    unknown = slash_to_inbound(payload("frobnicate"), ME, command="/switchboard")
    assert unknown is not None and unknown.native is not None and unknown.native.private


def test_another_command_or_an_incomplete_payload_is_not_ours() -> None:
    assert slash_to_inbound(payload("help", command="/other"), ME, command="/switchboard") is None
    assert slash_to_inbound(payload("help", response_url=""), ME, command="/switchboard") is None
