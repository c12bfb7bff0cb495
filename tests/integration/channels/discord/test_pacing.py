"""Discord's send budget shared by two adapters ("two processes") through one real Redis: the
fake's call times show their combined messages and edits within a channel's window and the bot's,
streamed edits and final messages included; a 429 only slows things; with Redis unreachable each
paces its own sends.

Windows are shrunk through `send_limits` so the tests run in seconds; the production defaults
(5 per 5 s per channel, 50 per second per bot) are checked in
tests/unit/channels/test_send_budget.py.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from channels.adapter import Chunk
from channels.discord.adapter import LIMITS, DiscordAdapter
from channels.discord.pacing import DiscordLimits
from channels.message import InboundMessage, Platform, ReplyTarget
from channels.pacing import SharedPacer
from channels.render import render_chunks
from channels.send_budget import Rate
from storage import Keys, SendWindows, connect
from tests.fakes.discord_server import Call, FakeDiscord
from tests.support import free_port, wait_until

JITTER_S = 0.15  # HTTP and scheduling noise between booking a slot and the fake seeing the call (a
# loaded 2-core host showed over 80 ms); unshared pacers still send whole bursts at one instant
SENDS = r"/channels/\d+/messages(/\d+)?"  # a new message, or an edit of one

MakeAdapter = Callable[..., Awaitable[DiscordAdapter]]


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def make_adapter(fake: FakeDiscord) -> AsyncIterator[MakeAdapter]:
    adapters: list[DiscordAdapter] = []

    async def deliver(msg: InboundMessage) -> None:
        return None

    async def make(client: aioredis.Redis, keys: Keys, limits: DiscordLimits) -> DiscordAdapter:
        adapter = DiscordAdapter(
            token=fake.token,
            deliver=deliver,
            api_base=fake.api_base,
            guild_ready_timeout=0.05,
            pacer=SharedPacer(SendWindows(client, keys=keys, owner="discord:test")),
            send_limits=limits,
        )
        await adapter.start(receive=False)
        adapters.append(adapter)
        return adapter

    try:
        yield make
    finally:
        for adapter in adapters:
            await adapter.stop()


def target(channel_id: str) -> ReplyTarget:
    return ReplyTarget(platform=Platform.DISCORD, chat_id=channel_id)


def chunk(text: str) -> list[Chunk]:
    return [Chunk(text=text, plain=text)]


def sends(fake: FakeDiscord, channel_id: str | None = None) -> list[Call]:
    """Messages created and edited (429s included: Discord counts those requests too)."""
    return [
        c
        for c in fake.calls
        if c.method in ("POST", "PATCH")
        and re.fullmatch(SENDS, c.path)
        and (channel_id is None or c.path.split("/")[2] == channel_id)
    ]


def most_in_any_window(calls: list[Call], seconds: float) -> int:
    """The most calls that arrived within any `seconds` (less jitter) of each other."""
    at = sorted(c.at for c in calls)
    span = seconds - JITTER_S
    return max(sum(1 for t in at[i:] if t - start < span) for i, start in enumerate(at))


def contents(fake: FakeDiscord, channel_id: str) -> list[str]:
    return [m["content"] for m in fake.bot_messages(channel_id)]


async def test_two_processes_sending_to_one_channel_keep_its_window_together(
    fake: FakeDiscord, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    limits = DiscordLimits(channel=Rate(limit=5, seconds=0.5))
    first, second = await make_adapter(redis, keys, limits), await make_adapter(redis, keys, limits)
    texts = [f"from {who} #{n}" for who in ("a", "b") for n in range(8)]
    channel = fake.channel_id
    await asyncio.gather(
        *(
            (first if t.startswith("from a") else second).send(target(channel), chunk(t))
            for t in texts
        )
    )
    assert sorted(contents(fake, channel)) == sorted(texts)  # each exactly once
    assert most_in_any_window(sends(fake, channel), 0.5) == 5  # unshared: 10 at once


async def test_a_stream_its_final_messages_and_notices_share_the_channel_budget(
    fake: FakeDiscord, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    limits = DiscordLimits(channel=Rate(limit=2, seconds=1.0))
    streaming, other = (
        await make_adapter(redis, keys, limits),
        await make_adapter(redis, keys, limits),
    )
    channel = fake.channel_id
    reply = "A **streamed** answer, written in many small pieces. " * 6
    final = render_chunks(reply, LIMITS)
    asker = InboundMessage(
        platform=Platform.DISCORD,
        workspace_id=fake.guild_id,
        chat_id=channel,
        sender_id=fake.bob["id"],
        sender_name="bob",
        text="?",
        provider_message_id="1",
    )

    async def stream() -> None:
        live = streaming.open_stream(target(channel))
        for n in range(1, 26):
            await live.update(reply[: len(reply) * n // 25])
            await asyncio.sleep(0.1)
        await live.finish(final)

    async def replies() -> None:
        await asyncio.sleep(0.05)  # the stream posts first, so it must edit among them
        await asyncio.gather(
            *(other.send(target(channel), chunk(f"other reply {n}")) for n in range(3)),
            other.notify(asker, "a notice for bob"),
        )

    await asyncio.gather(stream(), replies())
    calls = sends(fake, channel)
    assert {c.method for c in calls} == {"POST", "PATCH"}  # edits are paced with the sends
    assert most_in_any_window(calls, 1.0) == 2  # one budget for all of them
    texts = contents(fake, channel)
    assert texts.count(final[0].text) == 1  # the final text, settled once
    assert sorted(t for t in texts if t.startswith(("other", "a notice"))) == [
        "a notice for bob",
        *(f"other reply {n}" for n in range(3)),
    ]


async def test_sends_to_different_channels_share_the_bots_window(
    fake: FakeDiscord, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    limits = DiscordLimits(channel=Rate(limit=10, seconds=1.0), bot=Rate(limit=3, seconds=1.0))
    first, second = await make_adapter(redis, keys, limits), await make_adapter(redis, keys, limits)
    dm = fake.dm_channel(fake.alice)
    await asyncio.gather(
        *(first.send(target(fake.channel_id), chunk(f"c{n}")) for n in range(3)),
        *(second.send(target(dm), chunk(f"d{n}")) for n in range(3)),
    )
    assert sorted(contents(fake, fake.channel_id) + contents(fake, dm)) == [
        "c0",
        "c1",
        "c2",
        "d0",
        "d1",
        "d2",
    ]
    assert most_in_any_window(sends(fake), 1.0) == 3


async def test_a_429_slows_the_stream_but_the_final_text_arrives(
    fake: FakeDiscord, make_adapter: MakeAdapter, redis: aioredis.Redis, keys: Keys
) -> None:
    adapter = await make_adapter(redis, keys, DiscordLimits(channel=Rate(limit=5, seconds=1.0)))
    channel = fake.channel_id
    live = adapter.open_stream(target(channel))
    await live.update("The first words")
    await wait_until(lambda: contents(fake, channel) == ["The first words"])
    fake.fail_next("PATCH", SENDS, times=2, retry_after=0.3)
    final = render_chunks("The first words, and the whole answer.", LIMITS)
    await live.finish(final)
    assert contents(fake, channel) == [final[0].text]
    assert [c.limited for c in fake.calls_to("PATCH", SENDS)] == [True, True, False]


async def test_with_redis_unreachable_each_process_paces_its_own_sends(
    fake: FakeDiscord, make_adapter: MakeAdapter, keys: Keys
) -> None:
    dead = connect(f"redis://127.0.0.1:{free_port()}/0")
    channel = fake.channel_id
    try:
        adapter = await make_adapter(dead, keys, DiscordLimits(channel=Rate(limit=2, seconds=0.5)))
        with capture_logs() as logs:
            await asyncio.gather(*(adapter.send(target(channel), chunk(f"m{n}")) for n in range(4)))
    finally:
        await dead.aclose()
    assert sorted(contents(fake, channel)) == ["m0", "m1", "m2", "m3"]
    assert most_in_any_window(sends(fake, channel), 0.5) == 2  # paced in-process
    assert any(e["event"] == "pacing.shared_unavailable" for e in logs)
