"""The inbox payload codec: a message survives the trip, SDK objects stay behind, and anything
this release cannot read is refused as CorruptPayload (never a crash deeper in the worker)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from channels.manager.codec import CorruptPayload, decode_message, encode_message
from channels.message import (
    Attachment,
    ButtonPress,
    DiscordHandle,
    InboundMessage,
    NativeCommand,
    Platform,
)
from switchboard.conversation import ContextMessage

__all__: list[str] = []


def _msg(**overrides: Any) -> InboundMessage:
    fields: dict[str, Any] = {
        "platform": Platform.TELEGRAM,
        "workspace_id": "-100",
        "chat_id": "-100",
        "sender_id": "u1",
        "sender_name": "Ünïcode Ann ✓",
        "text": "hello «world»",
        "provider_message_id": "77",
    }
    fields.update(overrides)
    return InboundMessage(**fields)


def test_a_typed_message_with_every_field_set_round_trips() -> None:
    msg = _msg(
        is_dm=False,
        mentions_bot=True,
        thread_anchor="12",
        is_topic=True,
        reply_to_id="70",
        reply_to_bot=True,
        attachments=(
            Attachment("image", "cat.png", "https://x/cat.png", 1234, "image/png"),
            Attachment("file", "a.pdf", size=9, mime="application/pdf", file_id="BQACAgQ"),
            Attachment("file"),
        ),
        event_ids=("update-9", "ev-1"),
        sent_at=1_700_000_123.5,
        quoted=(
            ContextMessage("70", "Bob", 1_700_000_000.0, "the plan", ("plan.pdf",), True, True),
            ContextMessage("ext:-9:", "News", 0.0, "", quote="closed Friday", replied_to=True),
        ),
        observed=True,
    )
    back = decode_message(encode_message(msg))
    assert back == msg
    assert isinstance(back.quoted, tuple) and back.quoted[0].attachments == ("plan.pdf",)
    assert back.platform is Platform.TELEGRAM
    assert isinstance(back.attachments, tuple) and back.attachments[0].size == 1234
    assert (
        back.attachments[1].file_id == "BQACAgQ" and back.attachments[1].mime == "application/pdf"
    )
    assert isinstance(back.event_ids, tuple)


def test_a_button_press_round_trips() -> None:
    msg = _msg(text="", button=ButtonPress("q-abc", 2, "cbq-1"))
    back = decode_message(encode_message(msg))
    assert back.button == ButtonPress("q-abc", 2, "cbq-1")
    assert back == msg


def test_a_discord_handle_round_trips_with_its_token_and_nothing_else_of_the_payload() -> None:
    handle = DiscordHandle(channel_id="77", application_id="42", token="itoken-1", permissions="32")
    payload = {"id": "1", "author": {"id": "u1"}, "content": "hi", "token": "itoken-1"}
    msg = _msg(platform=Platform.DISCORD, handle=handle, raw=payload)
    encoded = encode_message(msg)
    back = decode_message(encoded)
    assert back.handle == handle and back.raw is None
    assert "raw" not in json.loads(encoded) and encoded.count(b"itoken-1") == 1


def test_a_slack_envelope_never_reaches_the_inbox() -> None:
    envelope = {
        "type": "block_actions",
        "response_url": "https://hooks.slack.com/actions/T1/1/secret",
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "token": "verification-token",
    }
    encoded = encode_message(_msg(platform=Platform.SLACK, raw=envelope))
    assert b"hooks.slack.com" not in encoded and b"verification-token" not in encoded
    assert decode_message(encoded).raw is None


def test_an_sdk_object_raw_is_left_behind_without_being_copied() -> None:
    class SdkMessage:  # stands in for aiogram's Message: not JSON, not to be deep-copied
        def __deepcopy__(self, memo: object) -> SdkMessage:
            raise AssertionError("the SDK object was copied")

    payload = encode_message(_msg(raw=SdkMessage()))
    assert "raw" not in json.loads(payload)
    assert decode_message(payload).raw is None


def test_an_older_ingress_discord_raw_is_read_as_its_handle_only() -> None:
    data = json.loads(encode_message(_msg(platform=Platform.DISCORD)))
    data["raw"] = {"id": "1", "channel_id": "77", "token": "t", "application_id": "42", "x": [1]}
    back = decode_message(json.dumps(data).encode())
    assert back.handle == DiscordHandle(channel_id="77", application_id="42", token="t")
    assert back.raw is None
    data["platform"] = "telegram"
    assert decode_message(json.dumps(data).encode()).handle is None


def test_unknown_fields_from_a_newer_release_are_ignored_and_missing_ones_defaulted() -> None:
    data = json.loads(encode_message(_msg()))
    data["added_in_a_later_release"] = {"x": 1}
    for optional in ("is_dm", "attachments", "event_ids", "button", "handle"):
        del data[optional]
    back = decode_message(json.dumps(data).encode())
    assert back == _msg()


def test_decode_accepts_text_as_well_as_bytes() -> None:
    assert decode_message(encode_message(_msg()).decode()) == _msg()


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\xff\xfe not utf-8",
        b"{not json",
        b"null",
        b"[1, 2]",
        b'"a string"',
        b"{}",
        json.dumps({"platform": "telegram"}).encode(),  # required fields missing
        json.dumps({**json.loads(encode_message(_msg())), "platform": "icq"}).encode(),
        json.dumps({**json.loads(encode_message(_msg())), "attachments": [1]}).encode(),
        json.dumps({**json.loads(encode_message(_msg())), "button": {"nope": 1}}).encode(),
    ],
    ids=[
        "empty",
        "not-utf8",
        "not-json",
        "null",
        "list",
        "string",
        "empty-object",
        "missing-fields",
        "unknown-platform",
        "bad-attachment",
        "bad-button",
    ],
)
def test_garbage_is_a_corrupt_payload(payload: bytes) -> None:
    with pytest.raises(CorruptPayload):
        decode_message(payload)


def test_unknown_fields_inside_a_button_or_attachment_are_ignored() -> None:
    from channels.manager.codec import decode_message as decode

    raw = {
        "platform": "telegram",
        "workspace_id": "",
        "chat_id": "1",
        "sender_id": "2",
        "sender_name": "Ann",
        "text": "",
        "provider_message_id": "3",
        "attachments": [{"kind": "image", "added_later": 1}],
        "button": {"question_id": "q", "option_index": 0, "added_later": True},
    }
    msg = decode(json.dumps(raw))
    assert msg.button is not None and msg.button.question_id == "q"
    assert msg.attachments[0].kind == "image"


def test_a_native_command_round_trips_with_its_answer_handles() -> None:
    native = NativeCommand(
        name="usage",
        private=True,
        place="thread",
        response_url="https://hooks.slack.test/commands/T1/2/x",
        application_id="42",
        token="itoken-9",
    )
    msg = _msg(platform=Platform.DISCORD, text="/usage", native=native)
    back = decode_message(encode_message(msg))
    assert back == msg and back.native == native
    assert "itoken-9" not in repr(native) and "hooks.slack" not in repr(native)
