"""The Slack adapter on its own: real slack-bolt / slack-sdk against the fake Slack on 127.0.0.1,
with a recording `deliver` standing in for the manager."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import structlog
from starlette.applications import Starlette
from starlette.routing import Route

from channels.adapter import AckKind, Chunk, QuestionPrompt
from channels.message import InboundMessage, Platform, ReplyTarget
from channels.slack import SlackAdapter
from switchboard.errors import PlatformAuthError, PlatformError, PlatformRateLimited
from tests.fakes.slack_server import FakeSlack, signed_headers
from tests.support import wait_until

SECRET = "test-signing-secret"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    server.add_user("U1", "alice")
    server.add_user("UADMIN", "root", admin=True)
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def inbox() -> list[InboundMessage]:
    return []


@pytest.fixture
async def socket_adapter(
    fake: FakeSlack, inbox: list[InboundMessage]
) -> AsyncIterator[SlackAdapter]:
    async def deliver(msg: InboundMessage) -> None:
        inbox.append(msg)

    adapter = SlackAdapter(
        bot_token=fake.bot_token, app_token=fake.app_token, deliver=deliver, api_base=fake.api_base
    )
    await adapter.start()
    await wait_until(lambda: fake.socket_connected)
    try:
        yield adapter
    finally:
        await adapter.stop()


@pytest.fixture
async def http_adapter(fake: FakeSlack, inbox: list[InboundMessage]) -> AsyncIterator[SlackAdapter]:
    async def deliver(msg: InboundMessage) -> None:
        inbox.append(msg)

    adapter = SlackAdapter(
        bot_token=fake.bot_token, signing_secret=SECRET, deliver=deliver, api_base=fake.api_base
    )
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.stop()


@pytest.fixture
async def http(http_adapter: SlackAdapter) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(routes=[Route("/slack/events", http_adapter.handle_webhook, methods=["POST"])])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://switchboard") as client:
        yield client


def mention(text: str = "<@UBOT> hello", **fields: Any) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": "U1",
        "text": text,
        "ts": "1700000000.000001",
        "channel": "C1",
        "team": "T0FAKE",
        **fields,
    }


def target(thread: str | None = "1700000000.000001", chat: str = "C1") -> ReplyTarget:
    return ReplyTarget(platform=Platform.SLACK, chat_id=chat, thread_anchor=thread)


def inbound(chat: str = "C1", *, is_dm: bool = False, sender: str = "U1") -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T0FAKE",
        chat_id=chat,
        sender_id=sender,
        sender_name=sender,
        text="hi",
        provider_message_id="1700000000.000001",
        is_dm=is_dm,
        thread_anchor=None if is_dm else "1700000000.000001",
    )


# -- construction ------------------------------------------------------------------------------


async def test_start_with_a_refused_token_raises_auth_error(fake: FakeSlack) -> None:
    async def deliver(msg: InboundMessage) -> None:
        return None

    adapter = SlackAdapter(
        bot_token="xoxb-wrong", signing_secret=SECRET, deliver=deliver, api_base=fake.api_base
    )
    with pytest.raises(PlatformAuthError) as info:
        await adapter.start()
    assert info.value.code == "invalid_auth"
    assert "xoxb-wrong" not in str(info.value)
    await adapter.stop()


async def test_start_with_a_refused_app_token_raises_auth_error(fake: FakeSlack) -> None:
    async def deliver(msg: InboundMessage) -> None:
        return None

    adapter = SlackAdapter(
        bot_token=fake.bot_token, app_token="xapp-wrong", deliver=deliver, api_base=fake.api_base
    )
    with pytest.raises(PlatformAuthError):
        await adapter.start()
    await adapter.stop()
    assert fake.connections == 0


# -- Socket Mode -------------------------------------------------------------------------------


async def test_socket_mode_event_is_acked_and_delivered(
    fake: FakeSlack, socket_adapter: SlackAdapter, inbox: list[InboundMessage]
) -> None:
    envelope = await fake.push_event(mention("<@UBOT> echo hi"), event_id="EvOne")
    assert (await fake.wait_ack(envelope))["envelope_id"] == envelope
    await wait_until(lambda: inbox)
    (msg,) = inbox
    assert (msg.text, msg.chat_id, msg.thread_anchor) == ("echo hi", "C1", "1700000000.000001")
    assert msg.mentions_bot and msg.event_ids == ("EvOne",) and msg.workspace_id == "T0FAKE"
    assert fake.calls_to("apps.connections.open")[0].token == fake.app_token


async def test_socket_mode_drops_bot_and_edit_events(
    fake: FakeSlack, socket_adapter: SlackAdapter, inbox: list[InboundMessage]
) -> None:
    ours = mention(user="UBOT", bot_id="BBOT", type="message", channel_type="im", channel="D1")
    edited = {"type": "message", "subtype": "message_changed", "channel": "D1", "ts": "2.0"}
    dm = {"type": "message", "user": "U1", "text": "hey", "ts": "3.0", "channel": "D1"}
    dm["channel_type"] = "im"
    envelopes = [await fake.push_event(e) for e in (ours, edited, dm)]
    for envelope in envelopes:
        await fake.wait_ack(envelope)
    await wait_until(lambda: inbox)
    assert [(m.chat_id, m.text, m.is_dm) for m in inbox] == [("D1", "hey", True)]


async def test_socket_mode_button_press_is_acked_and_delivered(
    fake: FakeSlack, socket_adapter: SlackAdapter, inbox: list[InboundMessage]
) -> None:
    payload = fake.block_action(
        user_id="U1", channel="C1", message_ts="5.0", action_id="q:abc:1", label="beta"
    )
    await fake.wait_ack(await fake.push_action(payload))
    await wait_until(lambda: inbox)
    (msg,) = inbox
    assert msg.button is not None
    assert (msg.button.question_id, msg.button.option_index, msg.text) == ("abc", 1, "beta")


async def test_socket_mode_reconnects_when_slack_asks_and_keeps_delivering(
    fake: FakeSlack, socket_adapter: SlackAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.request_refresh()
    await wait_until(lambda: fake.connections == 2 and fake.socket_connected)
    await fake.wait_ack(await fake.push_event(mention("<@UBOT> still there?")))
    await wait_until(lambda: inbox)
    assert inbox[0].text == "still there?"
    assert len(fake.calls_to("apps.connections.open")) == 2


async def test_stop_is_idempotent_and_closes_the_socket(
    fake: FakeSlack, socket_adapter: SlackAdapter
) -> None:
    await socket_adapter.stop()
    await socket_adapter.stop()
    await wait_until(lambda: not fake.socket_connected)


# -- Events API over HTTP ----------------------------------------------------------------------


async def test_signed_event_is_acked_at_once_and_delivered(
    fake: FakeSlack, http: httpx.AsyncClient, inbox: list[InboundMessage]
) -> None:
    body = json.dumps(fake.event_callback(mention(), event_id="EvHttp"))
    headers = {"Content-Type": "application/json", **signed_headers(SECRET, body)}
    response = await http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 200
    await wait_until(lambda: inbox)
    assert inbox[0].event_ids == ("EvHttp",)


async def test_retried_delivery_reaches_deliver_with_the_same_ids(
    fake: FakeSlack, http: httpx.AsyncClient, inbox: list[InboundMessage]
) -> None:
    body = json.dumps(fake.event_callback(mention(), event_id="EvRetry"))
    for retry in (None, 1):
        headers = {"Content-Type": "application/json"}
        headers.update(signed_headers(SECRET, body, retry_num=retry))
        assert (await http.post("/slack/events", content=body, headers=headers)).status_code == 200
    await wait_until(lambda: len(inbox) == 2)
    assert inbox[0].dedupe_ids == inbox[1].dedupe_ids


def _bad_hmac(body: str) -> dict[str, str]:
    return {"X-Slack-Signature": "v0=deadbeef", "X-Slack-Request-Timestamp": str(int(time.time()))}


def _wrong_secret(body: str) -> dict[str, str]:
    return signed_headers("some-other-secret", body)


def _stale(body: str) -> dict[str, str]:
    return signed_headers(SECRET, body, timestamp=int(time.time()) - 3600)


def _garbled_timestamp(body: str) -> dict[str, str]:
    return {"X-Slack-Signature": "v0=deadbeef", "X-Slack-Request-Timestamp": "yesterday"}


def _unsigned(body: str) -> dict[str, str]:
    return {}


@pytest.mark.parametrize("sign", [_bad_hmac, _wrong_secret, _stale, _garbled_timestamp, _unsigned])
async def test_bad_or_stale_signature_gets_401(
    fake: FakeSlack,
    http: httpx.AsyncClient,
    inbox: list[InboundMessage],
    sign: Callable[[str], dict[str, str]],
) -> None:
    body = json.dumps(fake.event_callback(mention()))
    headers = {"Content-Type": "application/json", **sign(body)}
    response = await http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 401
    assert inbox == []


async def test_malformed_unsigned_body_gets_401_not_400(http: httpx.AsyncClient) -> None:
    response = await http.post("/slack/events", content="{broken", headers=_bad_hmac("{broken"))
    assert response.status_code == 401


async def test_url_verification_is_answered_with_the_challenge(http: httpx.AsyncClient) -> None:
    body = json.dumps({"token": "t", "challenge": "ch4ll3nge", "type": "url_verification"})
    headers = {"Content-Type": "application/json", **signed_headers(SECRET, body)}
    response = await http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 200
    assert response.json() == {"challenge": "ch4ll3nge"}


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"type": "event_callback", "event": ', "application/json"),
        ("[1, 2, 3]", "application/json"),
        ('{"type": "event_callback", "event": "not an object"}', "application/json"),
        ("payload=" + urllib.parse.quote("{broken"), "application/x-www-form-urlencoded"),
        ("", "application/json"),
    ],
    ids=["truncated_json", "json_array", "event_not_object", "form_payload_not_json", "empty"],
)
async def test_malformed_signed_body_gets_400(
    http: httpx.AsyncClient, body: str, content_type: str
) -> None:
    headers = {"Content-Type": content_type, **signed_headers(SECRET, body)}
    response = await http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 400


async def test_signed_block_action_form_post_is_delivered(
    fake: FakeSlack, http: httpx.AsyncClient, inbox: list[InboundMessage]
) -> None:
    payload = fake.block_action(
        user_id="U1", channel="C1", message_ts="5.0", action_id="q:abc:0", label="alpha"
    )
    body = "payload=" + urllib.parse.quote(json.dumps(payload))
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    headers.update(signed_headers(SECRET, body))
    assert (await http.post("/slack/events", content=body, headers=headers)).status_code == 200
    await wait_until(lambda: inbox)
    assert inbox[0].button is not None and inbox[0].button.option_index == 0


@pytest.mark.parametrize(
    "event",
    [
        {"type": "reaction_added", "user": "U1", "reaction": "tada", "item": {"type": "message"}},
        {"type": "member_joined_channel", "user": "U1", "channel": "C1"},
        {"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "about"},
    ],
    ids=["reaction_added", "member_joined_channel", "app_home_opened"],
)
async def test_unhandled_event_types_are_acked_with_200_not_404(
    fake: FakeSlack, http: httpx.AsyncClient, inbox: list[InboundMessage], event: dict[str, Any]
) -> None:
    body = json.dumps(fake.event_callback({"ts": "1.0", **event}))
    headers = {"Content-Type": "application/json", **signed_headers(SECRET, body)}
    response = await http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 200
    assert inbox == []


async def test_app_rate_limited_is_answered_200_and_logged_as_a_warning(
    fake: FakeSlack, http: httpx.AsyncClient, inbox: list[InboundMessage]
) -> None:
    """Slack's own notice that it is holding back events (Events API docs: `app_rate_limited`)
    is not an event callback; a 404 counts as a failed delivery toward the subscription's
    5% failure limit, so it is answered 200 and the operator is warned."""
    notice = {
        "token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
        "type": "app_rate_limited",
        "team_id": "T0FAKE",
        "minute_rate_limited": 1518467820,
        "api_app_id": "A0FAKE",
    }
    body = json.dumps(notice)
    headers = {"Content-Type": "application/json", **signed_headers(SECRET, body)}
    with structlog.testing.capture_logs() as logs:
        response = await http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 200
    assert inbox == []
    warned = [e for e in logs if e["event"] == "slack.app_rate_limited"]
    assert warned and warned[0]["log_level"] == "warning"
    assert warned[0]["minute_rate_limited"] == 1518467820
    assert "token" not in warned[0]


def _foreign_button(fake: FakeSlack) -> dict[str, Any]:
    """A press on a button an older version (or another feature) of the app posted."""
    return fake.block_action(
        user_id="U1", channel="C1", message_ts="5.0", action_id="approve_v1", label="Approve"
    )


async def test_foreign_button_press_over_http_is_acked_and_ignored(
    fake: FakeSlack, http: httpx.AsyncClient, inbox: list[InboundMessage]
) -> None:
    body = "payload=" + urllib.parse.quote(json.dumps(_foreign_button(fake)))
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    headers.update(signed_headers(SECRET, body))
    response = await http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 200
    shortcut = {
        "type": "shortcut",
        "callback_id": "old_shortcut",
        "trigger_id": "1.2",
        "user": {"id": "U1"},
        "team": {"id": "T0FAKE"},
    }
    body = "payload=" + urllib.parse.quote(json.dumps(shortcut))
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    headers.update(signed_headers(SECRET, body))
    assert (await http.post("/slack/events", content=body, headers=headers)).status_code == 200
    assert inbox == []


async def test_foreign_button_press_over_socket_mode_is_acked_and_ignored(
    fake: FakeSlack, socket_adapter: SlackAdapter, inbox: list[InboundMessage]
) -> None:
    ack = await fake.wait_ack(await fake.push_action(_foreign_button(fake)))
    assert ack["envelope_id"]
    envelope = await fake.push_event(
        {"type": "reaction_added", "user": "U1", "reaction": "tada", "ts": "1.0"}
    )
    await fake.wait_ack(envelope)
    assert inbox == []


# -- Web API calls -----------------------------------------------------------------------------


async def test_send_posts_each_chunk_into_the_thread(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    ref = await http_adapter.send(target(), [Chunk("one", "one"), Chunk("*two*", "two")])
    posts = fake.calls_to("chat.postMessage")
    assert [p.params["text"] for p in posts] == ["one", "*two*"]
    assert {p.params["thread_ts"] for p in posts} == {"1700000000.000001"}
    assert {p.token for p in posts} == {fake.bot_token}
    assert ref.chat_id == "C1" and len(ref.message_ids) == 2 and all(ref.message_ids)


async def test_send_without_thread_posts_at_top_level(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    await http_adapter.send(target(thread=None, chat="D1"), [Chunk("hi", "hi")])
    (post,) = fake.calls_to("chat.postMessage")
    assert "thread_ts" not in post.params


async def test_ask_puts_buttons_on_the_last_chunk_and_edit_removes_them(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    prompt = QuestionPrompt("qid", ("alpha", "beta"), "U1")
    ref = await http_adapter.ask(target(), [Chunk("context", "context"), Chunk("Q?", "Q?")], prompt)
    first, last = fake.calls_to("chat.postMessage")
    assert "blocks" not in first.params
    assert last.params["text"] == "Q?"
    actions = [b for b in last.params["blocks"] if b["type"] == "actions"]
    assert [e["value"] for e in actions[0]["elements"]] == ["q:qid:0", "q:qid:1"]

    await http_adapter.edit(target(), ref.message_ids[-1], Chunk("Q?\n\n✅ beta", "Q? beta"))
    (update,) = fake.calls_to("chat.update")
    assert update.params == {
        "channel": "C1",
        "ts": ref.message_ids[-1],
        "text": "Q?\n\n✅ beta",
        "blocks": [],
    }


async def test_acknowledge_reacts_and_tolerates_an_existing_reaction(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    msg = inbound()
    await http_adapter.acknowledge(msg, AckKind.RECEIVED)
    await http_adapter.acknowledge(msg, AckKind.RECEIVED)
    await http_adapter.acknowledge(msg, AckKind.QUEUED)
    names = [c.params["name"] for c in fake.calls_to("reactions.add")]
    assert names == ["eyes", "eyes", "hourglass_flowing_sand"]
    assert fake.calls_to("reactions.add")[0].params["timestamp"] == msg.provider_message_id


async def test_typing_is_a_no_op_context(fake: FakeSlack, http_adapter: SlackAdapter) -> None:
    before = len(fake.calls)
    async with http_adapter.typing(target()):
        pass
    assert len(fake.calls) == before


async def test_private_notice_in_a_channel_is_ephemeral_and_escaped(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    await http_adapter.notify(inbound(), "Open <https://x?a=1&b=2>", private=True)
    (call,) = fake.calls_to("chat.postEphemeral")
    assert call.params["user"] == "U1" and call.params["thread_ts"] == "1700000000.000001"
    assert call.params["text"] == "Open &lt;https://x?a=1&amp;b=2&gt;"
    assert fake.calls_to("chat.postMessage") == []


async def test_notice_in_a_dm_is_a_plain_message(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    await http_adapter.notify(inbound("D1", is_dm=True), "linked", private=True)
    (call,) = fake.calls_to("chat.postMessage")
    assert call.params["channel"] == "D1" and call.params["text"] == "linked"


async def test_answer_button_tells_only_the_presser(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    await http_adapter.answer_button(inbound(sender="U2"), None)
    assert fake.calls_to("chat.postEphemeral") == []
    await http_adapter.answer_button(inbound(sender="U2"), "Only alice can answer this question.")
    (call,) = fake.calls_to("chat.postEphemeral")
    assert call.params["user"] == "U2"
    assert call.params["text"] == "Only alice can answer this question."


async def test_workspace_admin_comes_from_users_info(http_adapter: SlackAdapter) -> None:
    assert await http_adapter.is_workspace_admin(inbound(sender="UADMIN"))
    assert not await http_adapter.is_workspace_admin(inbound(sender="U1"))


async def test_429_is_retried_after_retry_after(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    fake.fail_next("chat.postMessage", times=1)
    ref = await http_adapter.send(target(), [Chunk("hello", "hello")])
    assert len(ref.message_ids) == 1
    assert len(fake.calls_to("chat.postMessage", ok_only=False)) == 2
    assert len(fake.calls_to("chat.postMessage")) == 1


async def test_persistent_429_becomes_platform_rate_limited(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    fake.fail_next("chat.update", times=4, retry_after=0)
    with pytest.raises(PlatformRateLimited) as info:
        await http_adapter.edit(target(), "1.0", Chunk("x", "x"))
    assert info.value.retry_after == 0


async def test_a_post_whose_reply_was_lost_is_not_sent_again(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    fake.drop_reply("chat.postMessage")
    with pytest.raises(PlatformError) as info:
        await http_adapter.send(target(), [Chunk("only once", "only once")])
    assert info.value.code == "network"
    assert fake.posted_texts() == ["only once"]  # Slack took it; no second copy followed

    fake.drop_reply("chat.postEphemeral")
    with pytest.raises(PlatformError):
        await http_adapter.notify(inbound(), "just for you", private=True)
    assert len(fake.calls_to("chat.postEphemeral")) == 1


async def test_idempotent_calls_are_sent_again_after_a_lost_reply(
    fake: FakeSlack, http_adapter: SlackAdapter
) -> None:
    ref = await http_adapter.send(target(), [Chunk("draft", "draft")])
    fake.drop_reply("chat.update")
    await http_adapter.edit(target(), ref.message_ids[0], Chunk("final", "final"))
    assert [c.params["text"] for c in fake.calls_to("chat.update")] == ["final", "final"]

    fake.drop_reply("reactions.add")
    await http_adapter.acknowledge(inbound(), AckKind.RECEIVED)  # the repeat: already_reacted
    assert len(fake.calls_to("reactions.add")) == 2

    fake.drop_reply("users.info")
    assert await http_adapter.is_workspace_admin(inbound(sender="UADMIN"))
    assert len(fake.calls_to("users.info")) == 2
