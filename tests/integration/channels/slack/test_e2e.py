"""Slack end to end: fake Slack ⇄ real slack-bolt/slack-sdk ⇄ SlackAdapter ⇄ the real manager
(real Redis, demo model). Each test drives Slack payloads in and reads the Web API calls out."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from channels.manager import Manager
from channels.message import InboundMessage
from channels.slack import LIMITS, SlackAdapter
from tests.fakes.slack_server import ApiCall, FakeSlack, signed_headers
from tests.support import wait_until

SECRET = "e2e-signing-secret"
_ts = itertools.count(1)


def new_ts() -> str:
    return f"1690000000.{next(_ts):06d}"


@dataclass
class Stack:
    fake: FakeSlack
    manager: Manager
    adapter: SlackAdapter
    seen: list[InboundMessage] = field(default_factory=list)

    async def settle(self, delivered: int) -> None:
        """Wait until `delivered` messages reached the manager, then until it is idle."""
        await wait_until(lambda: len(self.seen) >= delivered)
        await self.manager.idle()

    async def say(self, event: dict[str, Any], **kwargs: Any) -> None:
        """Push an event over Socket Mode and wait for bolt's ack."""
        await self.fake.wait_ack(await self.fake.push_event(event, **kwargs))

    def replies(self, channel: str = "C1") -> list[ApiCall]:
        return [c for c in self.fake.calls_to("chat.postMessage") if c.params["channel"] == channel]


def mention(text: str, *, ts: str, user: str = "U1", thread_ts: str | None = None) -> dict:
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": "C1",
        "team": "T0FAKE",
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def channel_message(text: str, *, ts: str, thread_ts: str | None = None, user: str = "U1") -> dict:
    event = mention(text, ts=ts, user=user, thread_ts=thread_ts)
    event.update(type="message", text=text, channel_type="channel")
    return event


def dm(text: str, *, ts: str) -> dict:
    return {
        "type": "message",
        "user": "U1",
        "text": text,
        "ts": ts,
        "channel": "D1",
        "channel_type": "im",
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
        fake.add_user("U2", "bob")
        overrides.setdefault("streaming", "off")  # these tests read chat.postMessage calls
        manager = await make_manager(**overrides)
        seen: list[InboundMessage] = []

        async def relay(msg: InboundMessage) -> None:
            await manager.deliver(msg)
            seen.append(msg)  # counted once durable: settle() then waits for it

        transport: dict[str, str] = (
            {"signing_secret": SECRET} if http else {"app_token": fake.app_token}
        )
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


async def test_mention_gets_a_threaded_reply(make_stack: StackFactory) -> None:
    s = await make_stack()
    ts = new_ts()
    await s.say(mention("hello", ts=ts))
    await s.settle(1)
    (reply,) = s.replies()
    assert reply.params["thread_ts"] == ts
    assert reply.params["text"].startswith("Hello! I'm Switchboard's demo agent.")


async def test_mention_gets_an_eyes_reaction_on_receipt(make_stack: StackFactory) -> None:
    s = await make_stack()
    ts = new_ts()
    await s.say(mention("hello", ts=ts))
    await s.settle(1)
    reactions = [c.params for c in s.fake.calls_to("reactions.add")]
    assert {"channel": "C1", "timestamp": ts, "name": "eyes"} in reactions


async def test_thread_follow_up_without_mention_continues_the_agent_thread(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    root = new_ts()
    await s.say(mention("first words here", ts=root))
    await s.settle(1)
    await s.say(channel_message("recall", ts=new_ts(), thread_ts=root))
    await s.settle(2)
    _, second = s.replies()
    assert second.params["thread_ts"] == root
    assert second.params["text"] == "You first said: first words here"


async def test_unmentioned_reply_in_a_thread_without_the_bot_is_ignored(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    await s.say(channel_message("recall", ts=new_ts(), thread_ts=new_ts()))
    await s.settle(1)
    assert s.replies() == []


async def test_dm_is_answered_in_the_dm(make_stack: StackFactory) -> None:
    s = await make_stack()
    await s.say(dm("echo from a DM", ts=new_ts()))
    await s.settle(1)
    (reply,) = s.replies("D1")
    assert reply.params["text"] == "from a DM"
    assert "thread_ts" not in reply.params


async def test_app_mention_and_its_message_twin_get_one_reply(make_stack: StackFactory) -> None:
    s = await make_stack()
    ts = new_ts()
    twin = channel_message("<@UBOT> echo once", ts=ts)
    await s.say(mention("echo once", ts=ts), event_id="EvMention")
    await s.say(twin, event_id="EvTwin")
    await s.settle(2)
    assert [r.params["text"] for r in s.replies()] == ["once"]


async def test_http_retry_with_the_same_event_id_gets_one_reply(make_stack: StackFactory) -> None:
    s = await make_stack(http=True)
    app = Starlette(routes=[Route("/slack/events", s.adapter.handle_webhook, methods=["POST"])])
    body = json.dumps(s.fake.event_callback(mention("echo just once", ts=new_ts()), event_id="Ev9"))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sb") as client:
        for retry in (None, 1, 2):
            headers = {"Content-Type": "application/json"}
            headers.update(signed_headers(SECRET, body, retry_num=retry))
            response = await client.post("/slack/events", content=body, headers=headers)
            assert response.status_code == 200
    await s.settle(3)
    assert [r.params["text"] for r in s.replies()] == ["just once"]


async def test_special_characters_and_channel_mentions_are_shown_literally(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    # What Slack sends when someone types `echo a < b && c <!channel>` literally.
    await s.say(mention("echo a &lt; b &amp;&amp; c &lt;!channel&gt;", ts=new_ts()))
    await s.settle(1)
    (reply,) = s.replies()
    assert reply.params["text"] == "a &lt; b &amp;&amp; c &lt;!channel&gt;"


async def test_long_answer_is_chunked_within_the_limit(make_stack: StackFactory) -> None:
    s = await make_stack()
    ts = new_ts()
    await s.say(mention("long 9000", ts=ts))
    await s.settle(1)
    replies = s.replies()
    assert len(replies) >= 3
    assert all(len(r.params["text"]) <= LIMITS.max_len for r in replies)
    assert {r.params["thread_ts"] for r in replies} == {ts}
    words = "".join(r.params["text"] for r in replies).split()
    assert sum(len(w) for w in words) > 7000


async def test_button_clarification_refuses_a_stranger_and_resumes_for_the_asker(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    root = new_ts()
    await s.say(mention("choose", ts=root))
    await s.settle(1)
    (question,) = s.replies()
    assert question.params["thread_ts"] == root
    buttons = [
        e for b in question.params["blocks"] if b["type"] == "actions" for e in b["elements"]
    ]
    assert [b["text"]["text"] for b in buttons] == ["alpha", "beta", "gamma"]
    message_ts = question.response["ts"]

    def press(user: str, index: int) -> dict[str, Any]:
        return s.fake.block_action(
            user_id=user,
            channel="C1",
            message_ts=message_ts,
            thread_ts=root,
            action_id=buttons[index]["action_id"],
            label=buttons[index]["text"]["text"],
        )

    await s.fake.wait_ack(await s.fake.push_action(press("U2", 0)))
    await s.settle(2)
    (notice,) = s.fake.calls_to("chat.postEphemeral")
    assert notice.params["user"] == "U2" and notice.params["thread_ts"] == root
    assert "Only" in notice.params["text"]
    assert len(s.replies()) == 1 and s.fake.calls_to("chat.update") == []

    await s.fake.wait_ack(await s.fake.push_action(press("U1", 1)))
    await s.settle(3)
    (update,) = s.fake.calls_to("chat.update")
    assert update.params["ts"] == message_ts and update.params["blocks"] == []
    assert update.params["text"].endswith("✅ beta")
    assert s.replies()[-1].params["text"] == "You chose: beta."
    assert s.replies()[-1].params["thread_ts"] == root


async def test_typed_answer_in_the_thread_answers_the_question(make_stack: StackFactory) -> None:
    s = await make_stack()
    root = new_ts()
    await s.say(mention("choose", ts=root))
    await s.settle(1)
    await s.say(channel_message("gamma", ts=new_ts(), thread_ts=root))
    await s.settle(2)
    assert s.replies()[-1].params["text"] == "You chose: gamma."


async def test_message_to_a_busy_thread_gets_an_hourglass_and_is_answered_later(
    make_stack: StackFactory, redis: Any, prefix: str
) -> None:
    s = await make_stack()
    root = new_ts()
    await s.say(mention("slow 0.5", ts=root))
    # The turn holds the thread's lock (observed, not touched) before the follow-up arrives.
    await wait_until(lambda: redis.keys(f"{prefix}*:lock"))
    follow_up = new_ts()
    await s.say(channel_message("echo later", ts=follow_up, thread_ts=root))

    def hourglasses() -> list[Any]:
        return [
            c
            for c in s.fake.calls_to("reactions.add")
            if c.params["name"] == "hourglass_flowing_sand"
        ]

    await wait_until(hourglasses)
    (reaction,) = hourglasses()
    assert reaction.params == {
        "channel": "C1",
        "timestamp": follow_up,
        "name": "hourglass_flowing_sand",
    }
    await s.settle(2)
    texts = [r.params["text"] for r in s.replies()]
    assert texts[0] == "Done after 0.5 s."
    assert texts[-1].endswith("later")


async def test_rate_limited_reply_is_retried_and_arrives_once(make_stack: StackFactory) -> None:
    s = await make_stack()
    s.fake.fail_next("chat.postMessage", times=1)
    await s.say(mention("echo patience", ts=new_ts()))
    await s.settle(1)
    assert [r.params["text"] for r in s.replies()] == ["patience"]
    assert len(s.fake.calls_to("chat.postMessage", ok_only=False)) == 2
