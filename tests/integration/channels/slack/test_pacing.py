"""Slack's send budget shared by two adapters ("two processes") through one real Redis: the fake
Web API's call times show their combined sends to one channel within its window, streamed
updates and final messages included; with Redis unreachable each paces its own sends.

Windows are shrunk through `send_limits` so the tests run in seconds; the production defaults
(1 message a second per channel, 50 `chat.update`s a minute per workspace) are checked in
tests/unit/channels/test_send_budget.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from channels.adapter import Chunk
from channels.message import InboundMessage, Platform, ReplyTarget
from channels.pacing import SharedPacer
from channels.render import render_chunks
from channels.send_budget import Rate
from channels.slack.adapter import LIMITS, SlackAdapter
from channels.slack.pacing import SlackLimits
from storage import Keys, SendWindows, connect
from tests.fakes.slack_server import ApiCall, FakeSlack
from tests.support import free_port

THREAD = "1690000000.000100"
TEAM = "T0FAKE"
JITTER_S = 0.15  # HTTP and scheduling noise between booking a slot and the fake seeing the call (a
# loaded 2-core host showed over 80 ms); unshared pacers still send whole bursts at one instant
SHOWN = (  # every method that puts something in a channel
    "chat.postMessage",
    "chat.postEphemeral",
    "chat.update",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
)

MakeAdapter = Callable[..., Awaitable[SlackAdapter]]


async def no_deliver(msg: InboundMessage) -> None:
    raise AssertionError("nothing is received here")


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def make_adapter(fake: FakeSlack) -> AsyncIterator[MakeAdapter]:
    adapters: list[SlackAdapter] = []

    async def make(client: aioredis.Redis, keys: Keys, limits: SlackLimits) -> SlackAdapter:
        pacer = SharedPacer(SendWindows(client, keys=keys, owner="slack:test"))
        adapter = SlackAdapter(
            bot_token=fake.bot_token,
            signing_secret="s3cret",
            deliver=no_deliver,
            api_base=fake.api_base,
            pacer=pacer,
            send_limits=limits,
        )
        await adapter.start()
        adapters.append(adapter)
        return adapter

    try:
        yield make
    finally:
        for adapter in adapters:
            await adapter.stop()


def target(channel: str = "C1") -> ReplyTarget:
    return ReplyTarget(
        platform=Platform.SLACK, chat_id=channel, thread_anchor=THREAD, workspace_id=TEAM
    )


def chunk(text: str) -> list[Chunk]:
    return [Chunk(text=text, plain=text)]


def shown_in(fake: FakeSlack, channel: str, methods: tuple[str, ...] = SHOWN) -> list[ApiCall]:
    return [
        c
        for c in fake.calls
        if c.method in methods and c.params.get("channel") == channel and c.status == 200
    ]


def most_in_any_window(calls: list[ApiCall], seconds: float) -> int:
    """The most calls that arrived within any `seconds` (less jitter) of each other."""
    at = sorted(c.at for c in calls)
    span = seconds - JITTER_S
    return max(sum(1 for t in at[i:] if t - start < span) for i, start in enumerate(at))


async def test_two_processes_sending_to_one_channel_keep_its_window_together(
    fake: FakeSlack, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    limits = SlackLimits(channel=Rate(limit=1, seconds=0.3))
    first, second = await make_adapter(redis, keys, limits), await make_adapter(redis, keys, limits)
    texts = [f"from {who} #{n}" for who in ("a", "b") for n in range(5)]
    await asyncio.gather(
        *(
            (first if text.startswith("from a") else second).send(target(), chunk(text))
            for text in texts
        )
    )
    posts = shown_in(fake, "C1")
    assert sorted(c.params["text"] for c in posts) == sorted(texts)  # each exactly once
    assert most_in_any_window(posts, 0.3) == 1  # two unshared pacers would send pairs at once


async def test_a_stream_its_final_messages_and_other_replies_share_the_channel_budget(
    fake: FakeSlack, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    limits = SlackLimits(channel=Rate(limit=1, seconds=0.5))
    streaming, other = (
        await make_adapter(redis, keys, limits),
        await make_adapter(redis, keys, limits),
    )
    reply = "A **streamed** answer, written in many small pieces. " * 6
    final = render_chunks(reply, LIMITS)
    asker = InboundMessage(
        platform=Platform.SLACK,
        workspace_id=TEAM,
        chat_id="C1",
        sender_id="U2",
        sender_name="bob",
        text="?",
        provider_message_id="1690000000.000200",
        thread_anchor=THREAD,
    )

    async def stream() -> None:
        live = streaming.open_stream(target(), recipient_id="U1")
        for n in range(1, 21):
            await live.update(reply[: len(reply) * n // 20])
            await asyncio.sleep(0.1)
        await live.finish(final)

    async def replies() -> None:
        await asyncio.sleep(0.05)  # the stream starts first, so it must append among them
        await asyncio.gather(
            *(other.send(target(), chunk(f"other reply {n}")) for n in range(3)),
            other.notify(asker, "a notice for bob", private=True),
        )

    await asyncio.gather(stream(), replies())
    calls = shown_in(fake, "C1")
    methods = {c.method for c in calls}
    # appends are partial updates: they yield to the replies queued for the channel
    assert {"chat.startStream", "chat.stopStream"} <= methods
    assert {"chat.postMessage", "chat.postEphemeral", "chat.update"} <= methods
    assert most_in_any_window(calls, 0.5) == 1  # one budget for all of them
    texts = fake.texts_in("C1")
    assert texts.count(final[0].text) == 1  # the final text, settled once
    assert sorted(t for t in texts if t.startswith("other")) == [
        f"other reply {n}" for n in range(3)
    ]


async def test_edits_in_one_workspace_share_its_update_window(
    fake: FakeSlack, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    limits = SlackLimits(channel=Rate(limit=10, seconds=1.0), updates=Rate(limit=2, seconds=1.0))
    first, second = await make_adapter(redis, keys, limits), await make_adapter(redis, keys, limits)
    await asyncio.gather(
        *(first.edit(target("C1"), "1.0", Chunk(f"C1 {n}", f"C1 {n}")) for n in range(3)),
        *(second.edit(target("C2"), "2.0", Chunk(f"C2 {n}", f"C2 {n}")) for n in range(3)),
    )
    updates = fake.calls_to("chat.update")
    assert len(updates) == 6
    assert most_in_any_window(updates, 1.0) == 2  # across channels: one workspace window


async def test_a_429_slows_the_shared_budget_but_loses_nothing(
    fake: FakeSlack, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    limits = SlackLimits(channel=Rate(limit=1, seconds=0.2))
    first, second = await make_adapter(redis, keys, limits), await make_adapter(redis, keys, limits)
    fake.fail_next("chat.postMessage", times=2, retry_after=1)
    texts = [f"reply {n}" for n in range(4)]
    await asyncio.gather(
        *((first, second)[n % 2].send(target(), chunk(t)) for n, t in enumerate(texts))
    )
    assert len(fake.calls_to("chat.postMessage", ok_only=False)) == 6  # two were refused
    assert sorted(fake.posted_texts()) == texts  # and retried: each delivered once


async def test_with_redis_unreachable_each_process_paces_its_own_sends(
    fake: FakeSlack, make_adapter: MakeAdapter, keys: Keys
) -> None:
    dead = connect(f"redis://127.0.0.1:{free_port()}/0")
    try:
        adapter = await make_adapter(dead, keys, SlackLimits(channel=Rate(limit=1, seconds=0.3)))
        with capture_logs() as logs:
            await asyncio.gather(*(adapter.send(target(), chunk(f"m{n}")) for n in range(3)))
    finally:
        await dead.aclose()
    posts = shown_in(fake, "C1")
    assert sorted(c.params["text"] for c in posts) == ["m0", "m1", "m2"]
    assert most_in_any_window(posts, 0.3) == 1  # paced in-process
    assert any(e["event"] == "pacing.shared_unavailable" for e in logs)
