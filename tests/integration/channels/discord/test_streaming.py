"""Discord streaming against the fake (REST + gateway), driven by discord.py: the first text as
a message, edits at most one per 1.2 s, overflow into new messages at 2000 characters, and the
final messages equal to what `send` posts."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from channels.adapter import Streams
from channels.discord.adapter import EDIT_INTERVAL_S, LIMITS, DiscordAdapter
from channels.message import InboundMessage, Platform, ReplyTarget
from channels.render import render_chunks
from tests.fakes.discord_server import FakeDiscord

REPLY = (
    "Here is **the answer**.\n\n```python\ndef double(x):\n    return x * 2\n```\n\n"
    "See [the docs](https://example.com/docs) and _more_."
)
MESSAGES = r"/channels/\d+/messages"
ONE_MESSAGE = r"/channels/\d+/messages/\d+"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def adapter(fake: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    async def deliver(msg: InboundMessage) -> None:
        return None

    adapter = DiscordAdapter(
        token=fake.token, deliver=deliver, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    await adapter.start(receive=False)
    try:
        yield adapter
    finally:
        await adapter.stop()


def target(fake: FakeDiscord) -> ReplyTarget:
    return ReplyTarget(platform=Platform.DISCORD, chat_id=fake.channel_id)


async def write(stream: object, text: str, pieces: int, pause: float) -> None:
    for n in range(1, pieces + 1):
        await stream.update(text[: len(text) * n // pieces])  # type: ignore[attr-defined]
        await asyncio.sleep(pause)


def contents(fake: FakeDiscord) -> list[str]:
    return [m["content"] for m in fake.bot_messages(fake.channel_id)]


async def test_first_text_then_paced_edits_then_the_final_text(
    fake: FakeDiscord, adapter: DiscordAdapter
) -> None:
    assert isinstance(adapter, Streams)
    stream = adapter.open_stream(target(fake))
    await stream.status("Using current_time…")
    await asyncio.sleep(0.1)
    await write(stream, REPLY, pieces=10, pause=0.3)
    final = render_chunks(REPLY, LIMITS)
    sent = await stream.finish(final)

    assert len(fake.calls_to("POST", MESSAGES)) == 1
    edits = fake.calls_to("PATCH", ONE_MESSAGE)
    assert len(edits) >= 3  # several partial updates before the final one
    assert "Using current" in fake.calls_to("POST", MESSAGES)[0].json["content"]
    assert edits[-1].json["content"] == final[0].text
    at = [c.at for c in fake.calls_to("PATCH", ONE_MESSAGE)]
    assert all(b - a >= EDIT_INTERVAL_S - 0.1 for a, b in itertools.pairwise(at))
    streamed = contents(fake)
    await adapter.send(target(fake), final)  # the non-streaming path
    assert contents(fake) == streamed * 2
    assert len(sent.message_ids) == 1


async def test_a_long_reply_overflows_into_new_messages(
    fake: FakeDiscord, adapter: DiscordAdapter
) -> None:
    code = "\n".join(f"line_{n} = {n} * 2  # commentary" for n in range(150))
    reply = "Intro.\n\n```python\n" + code + "\n```\n\nDone."
    final = render_chunks(reply, LIMITS)
    assert len(final) >= 3
    stream = adapter.open_stream(target(fake))
    await write(stream, reply, pieces=4, pause=0.3)
    sent = await stream.finish(final)
    assert contents(fake) == [c.text for c in final]
    assert len(sent.message_ids) == len(final)
    assert all(len(c) <= 2000 for c in contents(fake))


async def test_cancel_with_and_without_a_note(fake: FakeDiscord, adapter: DiscordAdapter) -> None:
    stream = adapter.open_stream(target(fake))
    await stream.update("Partial answer")
    await asyncio.sleep(0.2)
    assert await stream.cancel() is None
    assert contents(fake) == []
    assert len(fake.calls_to("DELETE", ONE_MESSAGE)) == 1

    stream = adapter.open_stream(target(fake))
    await stream.update("Partial answer")
    await asyncio.sleep(0.2)
    assert await stream.cancel("(stopped)") is not None
    assert contents(fake) == ["Partial answer\n\n_(stopped)_"]
