"""Slack's slash command and the thread forms: fake Slack ⇄ real slack-bolt/slack-sdk ⇄
SlackAdapter ⇄ the real manager (real Redis, demo model). `/switchboard …` arrives over Socket Mode
or as a signed form POST, is acked once it is in the inbox, and is answered through its
response_url; inside threads `!stop` and `@bot stop` do the same work."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from channels.manager import Manager
from channels.message import InboundMessage
from channels.slack import SlackAdapter
from tests.fakes.slack_server import FakeSlack, signed_headers
from tests.support import wait_until

SECRET = "commands-signing-secret"
_ts = itertools.count(1)


def new_ts() -> str:
    return f"1695000000.{next(_ts):06d}"


@dataclass
class Stack:
    fake: FakeSlack
    manager: Manager
    adapter: SlackAdapter
    seen: list[InboundMessage] = field(default_factory=list)

    async def say(self, event: dict[str, Any]) -> None:
        await self.fake.wait_ack(await self.fake.push_event(event))

    async def command(self, text: str, **kw: Any) -> dict[str, str]:
        """`/switchboard text` over Socket Mode; returns the payload once bolt acked it."""
        payload = self.fake.slash_command(text, **kw)
        await self.fake.wait_ack(await self.fake.push_command(payload))
        return payload

    async def answers(self, payload: dict[str, str], count: int = 1) -> list[dict[str, Any]]:
        await wait_until(lambda: len(self.fake.responses_to(payload)) >= count)
        return self.fake.responses_to(payload)

    def thread_texts(self, thread_ts: str) -> list[str]:
        return [
            str(c.params["text"])
            for c in self.fake.calls_to("chat.postMessage")
            if c.params.get("thread_ts") == thread_ts
        ]


def mention(text: str, *, ts: str) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": "U1",
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "team": "T0FAKE",
    }


def in_thread(text: str, *, thread_ts: str) -> dict[str, Any]:
    return {
        "type": "message",
        "channel_type": "channel",
        "user": "U1",
        "text": text,
        "ts": new_ts(),
        "thread_ts": thread_ts,
        "channel": "C1",
        "team": "T0FAKE",
    }


StackFactory = Callable[..., Awaitable[Stack]]


@pytest.fixture
async def make_stack(make_manager: Any) -> AsyncIterator[StackFactory]:
    started: list[Stack] = []

    async def factory(*, http: bool = False, **overrides: Any) -> Stack:
        fake = FakeSlack()
        await fake.start()
        fake.add_user("U1", "alice")
        overrides.setdefault("streaming", "off")
        manager = await make_manager(**overrides)
        seen: list[InboundMessage] = []

        async def relay(msg: InboundMessage) -> None:
            await manager.deliver(msg)
            seen.append(msg)

        transport = {"signing_secret": SECRET} if http else {"app_token": fake.app_token}
        adapter = SlackAdapter(
            bot_token=fake.bot_token, deliver=relay, api_base=fake.api_base, **transport
        )
        manager.register(adapter)
        stack = Stack(fake, manager, adapter, seen)
        started.append(stack)
        await adapter.start()
        if not http:
            await wait_until(lambda: fake.socket_connected)
        return stack

    try:
        yield factory
    finally:
        for stack in started:
            await stack.adapter.stop()
            await stack.fake.stop()


async def _post_form(adapter: SlackAdapter, body: str, headers: dict[str, str]) -> httpx.Response:
    app = Starlette(routes=[Route("/slack/commands", adapter.handle_webhook, methods=["POST"])])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://switchboard"
    ) as client:
        return await client.post("/slack/commands", content=body, headers=headers)


async def test_slash_command_over_socket_mode_is_answered_only_to_the_sender(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    payload = await s.command("help")
    [answer] = await s.answers(payload)
    assert answer["response_type"] == "ephemeral"
    assert "/switchboard new — " in answer["text"] and "!stop" in answer["text"]
    assert s.seen[0].native is not None and s.seen[0].text == "/help"
    assert not s.fake.calls_to("chat.postMessage")  # nothing said in the channel


async def test_bare_slash_command_is_help(make_stack: StackFactory) -> None:
    s = await make_stack()
    [answer] = await s.answers(await s.command(""))
    assert "Commands:" in answer["text"]


async def test_signed_slash_command_over_http_is_acked_and_answered_ephemerally(
    make_stack: StackFactory,
) -> None:
    s = await make_stack(http=True)
    payload = s.fake.slash_command("status", channel="D1")
    body = urlencode(payload)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    response = await _post_form(s.adapter, body, headers | signed_headers(SECRET, body))
    assert response.status_code == 200
    [answer] = await s.answers(payload)
    assert answer["response_type"] == "ephemeral"
    assert answer["text"].startswith("No conversation yet here.")


async def test_forged_slash_command_is_refused_and_never_delivered(
    make_stack: StackFactory,
) -> None:
    s = await make_stack(http=True)
    body = urlencode(s.fake.slash_command("link"))
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    response = await _post_form(s.adapter, body, headers | signed_headers("not-the-secret", body))
    assert response.status_code == 401
    assert s.seen == [] and s.fake.responses == []


async def test_stop_from_the_slash_command_in_a_dm_cancels_the_running_turn(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    dm = {"type": "message", "channel_type": "im", "user": "U1", "channel": "D1"}
    await s.say({**dm, "text": "slow 20", "ts": new_ts(), "team": "T0FAKE"})
    await wait_until(lambda: len(s.seen) == 1)
    await wait_until(lambda: s.fake.calls_to("reactions.add"))  # the turn is on its way
    payload = await s.command("stop", channel="D1")
    [answer] = await s.answers(payload)
    assert answer == {
        "trigger_id": payload["trigger_id"],
        "response_type": "in_channel",
        "text": "Stopping the current answer.",
    }
    await s.manager.idle(timeout=10)
    assert "Stopped." in [str(c.params["text"]) for c in s.fake.calls_to("chat.postMessage")]


async def test_slash_stop_in_a_channel_says_to_use_the_thread_form(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    [answer] = await s.answers(await s.command("stop", channel="C1"))
    assert answer["response_type"] == "ephemeral"
    assert "!stop" in answer["text"] and "thread" in answer["text"]


async def test_bang_stop_in_the_thread_cancels_the_running_turn(make_stack: StackFactory) -> None:
    s = await make_stack()
    root = new_ts()
    await s.say(mention("slow 20", ts=root))
    await wait_until(lambda: s.fake.calls_to("reactions.add"))
    await s.say(in_thread("!stop", thread_ts=root))
    await s.manager.idle(timeout=10)
    texts = s.thread_texts(root)
    assert "Stopping the current answer." in texts and "Stopped." in texts


async def test_mentioning_the_bot_with_the_word_stops_too(make_stack: StackFactory) -> None:
    s = await make_stack()
    root = new_ts()
    await s.say(mention("slow 20", ts=root))
    await wait_until(lambda: s.fake.calls_to("reactions.add"))
    await s.say({**in_thread("<@UBOT> stop", thread_ts=root), "type": "app_mention"})
    await s.manager.idle(timeout=10)
    assert "Stopping the current answer." in s.thread_texts(root)


async def test_bang_command_in_a_thread_the_bot_is_not_in_is_left_alone(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    stranger = new_ts()
    await s.say(in_thread("!new", thread_ts=stranger))
    await wait_until(lambda: len(s.seen) == 1)
    await s.manager.idle()
    assert s.fake.calls_to("chat.postMessage") == []


async def test_spent_response_url_falls_back_to_an_ephemeral_message(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    payload = s.fake.slash_command("help", channel="C1")
    s.fake.expire_responses()
    await s.fake.wait_ack(await s.fake.push_command(payload))
    await wait_until(lambda: s.fake.calls_to("chat.postEphemeral"))
    [call] = s.fake.calls_to("chat.postEphemeral")
    assert call.params["user"] == "U1" and "Commands:" in str(call.params["text"])
