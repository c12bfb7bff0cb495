"""Slack streaming against the fake Web API, driven by the real slack-sdk client: the streaming
API in the reply thread, `chat.postMessage` + `chat.update` where it is refused, settling on
exactly what `send` would have posted."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from channels.adapter import Streams
from channels.message import InboundMessage, Platform, ReplyTarget
from channels.render import render_chunks
from channels.slack.adapter import LIMITS, SlackAdapter
from channels.slack.stream import EDIT_INTERVAL_S
from tests.fakes.slack_server import FakeSlack

THREAD = "1690000000.000100"
REPLY = (
    "Here is **the answer**.\n\n```python\ndef double(x):\n    return x * 2\n```\n\n"
    "See [the docs](https://example.com/docs) and _more_."
)


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
async def adapter(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = SlackAdapter(
        bot_token=fake.bot_token,
        signing_secret="s3cret",
        deliver=no_deliver,
        api_base=fake.api_base,
    )
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.stop()


def channel_target(channel: str = "C1", thread: str | None = THREAD) -> ReplyTarget:
    return ReplyTarget(
        platform=Platform.SLACK, chat_id=channel, thread_anchor=thread, workspace_id="T0FAKE"
    )


async def write(stream: object, text: str, pieces: int, pause: float) -> None:
    for n in range(1, pieces + 1):
        await stream.update(text[: len(text) * n // pieces])  # type: ignore[attr-defined]
        await asyncio.sleep(pause)


def spacing_ok(fake: FakeSlack, methods: tuple[str, ...], interval: float) -> bool:
    at = [c.at for c in fake.calls if c.method in methods and c.status == 200]
    return all(b - a >= interval - 0.1 for a, b in itertools.pairwise(at))


async def test_streaming_api_in_the_thread_then_the_final_mrkdwn(
    fake: FakeSlack, adapter: SlackAdapter
) -> None:
    assert isinstance(adapter, Streams)
    target = channel_target()
    stream = adapter.open_stream(target, recipient_id="U1")
    await write(stream, REPLY, pieces=8, pause=0.3)
    final = render_chunks(REPLY, LIMITS)
    sent = await stream.finish(final)

    [start] = fake.calls_to("chat.startStream")
    assert start.params["thread_ts"] == THREAD
    assert start.params["recipient_user_id"] == "U1"
    assert start.params["recipient_team_id"] == "T0FAKE"
    appends = fake.calls_to("chat.appendStream")
    assert len(appends) >= 2  # several partial updates before the final one
    streamed = start.params["markdown_text"] + "".join(a.params["markdown_text"] for a in appends)
    assert REPLY.startswith(streamed)  # only what the model wrote, in order
    assert len(fake.calls_to("chat.stopStream")) == 1
    assert spacing_ok(fake, ("chat.startStream", "chat.appendStream"), 1.0)
    assert all(c.response.get("ok") for c in fake.calls)
    # settled on exactly what the non-streaming path posts
    await adapter.send(channel_target("C2"), final)
    assert fake.texts_in("C1") == fake.texts_in("C2") == [c.text for c in final]
    assert sent.message_ids == (start.response["ts"],)


async def test_without_the_recipient_a_channel_falls_back_to_post_and_update(
    fake: FakeSlack, adapter: SlackAdapter
) -> None:
    stream = adapter.open_stream(channel_target())
    # the refused start spent the channel's second, so the first post waits for the next one
    await write(stream, REPLY, pieces=12, pause=0.3)
    final = render_chunks(REPLY, LIMITS)
    await stream.finish(final)
    [refused] = fake.calls_to("chat.startStream")
    assert refused.response["error"] == "missing_recipient_user_id"
    assert len(fake.calls_to("chat.postMessage")) == 1
    updates = fake.calls_to("chat.update")
    assert len(updates) >= 2
    assert updates[-1].params["text"] == final[0].text
    assert spacing_ok(fake, ("chat.postMessage", "chat.update"), EDIT_INTERVAL_S)
    assert fake.texts_in("C1") == [c.text for c in final]
    # the refusal is remembered: the next reply there goes straight to edits
    calls = len(fake.calls)
    again = adapter.open_stream(channel_target())
    await again.update("Short")
    await again.finish(render_chunks("Short", LIMITS))
    assert [c.method for c in fake.calls[calls:]] == ["chat.postMessage"]


async def test_a_workspace_without_streaming_falls_back_and_still_streams(
    fake: FakeSlack, adapter: SlackAdapter
) -> None:
    fake.refuse_streaming = "feature_not_enabled"
    stream = adapter.open_stream(channel_target("D1"))
    await stream.status("Using current_time…")
    await asyncio.sleep(0.1)
    await write(stream, REPLY, pieces=8, pause=0.4)
    final = render_chunks(REPLY, LIMITS)
    await stream.finish(final)
    assert [c.response["error"] for c in fake.calls_to("chat.startStream", ok_only=False)] == [
        "feature_not_enabled"
    ]
    assert len(fake.calls_to("chat.update")) >= 2
    assert fake.texts_in("D1") == [c.text for c in final]


async def test_a_long_reply_continues_in_new_messages(
    fake: FakeSlack, adapter: SlackAdapter
) -> None:
    code = "\n".join(f"line_{n} = {n} * 2  # some commentary here" for n in range(250))
    reply = "Intro.\n\n```\n" + code + "\n```\n\nDone."
    final = render_chunks(reply, LIMITS)
    assert len(final) >= 3
    for channel, recipient in (("D1", None), ("C1", None)):  # streaming API, then edits
        stream = adapter.open_stream(channel_target(channel), recipient_id=recipient)
        await write(stream, reply, pieces=4, pause=0.3)
        sent = await stream.finish(final)
        assert fake.texts_in(channel) == [c.text for c in final]
        assert len(sent.message_ids) == len(final)


async def test_cancel_with_and_without_a_note(fake: FakeSlack, adapter: SlackAdapter) -> None:
    stream = adapter.open_stream(channel_target("D1"))
    await stream.update("Partial answer")
    await asyncio.sleep(0.2)
    kept = await stream.cancel("(stopped)")
    assert kept is not None
    assert fake.texts_in("D1") == ["Partial answer\n\n_\\(stopped\\)_"]  # markdown, Slack renders

    stream = adapter.open_stream(channel_target("D2"))
    await stream.update("Partial answer")
    await asyncio.sleep(0.2)
    assert await stream.cancel() is None
    assert fake.texts_in("D2") == []

    stream = adapter.open_stream(channel_target("C1"))  # edits
    await stream.update("Partial answer")
    await asyncio.sleep(0.2)
    assert await stream.cancel() is None
    assert fake.texts_in("C1") == []
    stream = adapter.open_stream(channel_target("C1"))
    await stream.update("Partial answer")
    await asyncio.sleep(0.2)
    assert await stream.cancel("(stopped)") is not None
    assert fake.texts_in("C1") == ["Partial answer\n\n_(stopped)_"]


async def test_after_a_refused_stream_an_answer_written_in_3_s_shows_more_than_one_state(
    fake: FakeSlack, adapter: SlackAdapter
) -> None:
    """The fallback posts what it has when it takes over, then edits at its interval: a reader
    of a 3-second answer sees it grow (a post and at least one edit before the final one),
    not one partial state and then the whole; so does the next answer there, whose channel's
    refusal is remembered."""
    fake.refuse_streaming = "feature_not_enabled"
    final = render_chunks(REPLY, LIMITS)
    for reply in ("refused now", "refusal remembered"):
        calls = len(fake.calls)
        stream = adapter.open_stream(channel_target("C1"))
        await write(stream, REPLY, pieces=10, pause=0.3)
        made = fake.calls[calls:]
        shows = ("chat.postMessage", "chat.update")
        shown = [c.params["text"] for c in made if c.method in shows]
        await stream.finish(final)
        partial = [t for t in shown if t != final[0].text]
        assert [c.method for c in made].count("chat.postMessage") == 1
        assert len(dict.fromkeys(partial)) >= 2, (reply, partial)
