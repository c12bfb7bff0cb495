"""The shared streaming pieces: the throttle's pacing and coalescing, safe partial rendering,
and `EditStream` settling its messages on the final chunks (against in-memory message ops)."""

from __future__ import annotations

import asyncio
import time
from html.parser import HTMLParser

import pytest

from channels.adapter import Capabilities, Chunk, Markup
from channels.render import render_chunks
from channels.send_budget import BudgetBusy, is_cosmetic
from channels.streaming import (
    EditStream,
    MessageOps,
    Partial,
    Throttle,
    escape_markdown,
    partial_chunks,
    with_trailer,
)
from switchboard.errors import PlatformError, PlatformRateLimited

TG = Capabilities(max_len=4096, len_unit="utf16", markup=Markup.TELEGRAM_HTML)
SMALL = Capabilities(max_len=60, len_unit="chars", markup=Markup.DISCORD_MARKDOWN)
INTERVAL = 0.05


class Recorder:
    """A show that takes `delay` seconds and records (start, end, value)."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.shows: list[tuple[float, float, str]] = []
        self.fail_with: list[Exception] = []

    async def __call__(self, value: str) -> None:
        start = time.monotonic()
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_with:
            raise self.fail_with.pop(0)
        self.shows.append((start, time.monotonic(), value))


async def test_first_value_is_shown_at_once_and_the_rest_coalesce_to_the_latest() -> None:
    show = Recorder(delay=0.02)
    throttle: Throttle[str] = Throttle(show, interval=INTERVAL)
    for n in range(1, 51):
        throttle.offer(f"v{n}")  # synchronous: never waits on the show
        await asyncio.sleep(0.002)
    await throttle.flush()
    values = [v for _, _, v in show.shows]
    assert values[0] == "v1"
    assert values[-1] == "v50"
    assert len(values) < 50  # coalesced
    assert values == sorted(values, key=lambda v: int(v[1:]))  # never an older value after
    for (_, end, _), (start, _, _) in zip(show.shows, show.shows[1:], strict=False):
        assert start - end >= INTERVAL - 0.005  # paced from the end of the previous show


async def test_settle_drops_pending_waits_for_the_show_in_flight_and_the_interval() -> None:
    show = Recorder(delay=0.05)
    throttle: Throttle[str] = Throttle(show, interval=INTERVAL)
    throttle.offer("a")
    await asyncio.sleep(0.01)  # "a" is in flight
    throttle.offer("b")
    await throttle.settle()
    settled_at = time.monotonic()
    assert [v for _, _, v in show.shows] == ["a"]
    assert settled_at - show.shows[-1][1] >= INTERVAL - 0.005
    throttle.offer("c")  # closed: ignored
    await asyncio.sleep(0.02)
    assert [v for _, _, v in show.shows] == ["a"]


async def test_settle_without_pace_returns_after_the_show_in_flight() -> None:
    show = Recorder(delay=0.03)
    throttle: Throttle[str] = Throttle(show, interval=10.0)
    throttle.offer("a")
    await asyncio.sleep(0.005)
    throttle.offer("b")  # waits for the 10 s interval; settle drops it
    await asyncio.wait_for(throttle.settle(pace=False), 5.0)
    assert [v for _, _, v in show.shows] == ["a"]


async def test_a_rate_limit_delays_the_latest_value_instead_of_losing_it() -> None:
    show = Recorder()
    show.fail_with.append(PlatformRateLimited("slow down", platform="x", retry_after=0.2))
    throttle: Throttle[str] = Throttle(show, interval=INTERVAL)
    started = time.monotonic()
    throttle.offer("a")
    await throttle.flush()
    assert [v for _, _, v in show.shows] == ["a"]
    assert show.shows[0][0] - started >= 0.2 - 0.005
    assert throttle.failed == 1 and throttle.shown == 1


async def test_a_show_whose_budget_is_busy_is_tried_again_an_interval_later() -> None:
    show = Recorder()
    show.fail_with.append(BudgetBusy("sendMessageDraft"))
    throttle: Throttle[str] = Throttle(show, interval=INTERVAL)
    started = time.monotonic()
    throttle.offer("a")
    await throttle.flush()
    assert [v for _, _, v in show.shows] == ["a"]
    assert show.shows[0][0] - started >= INTERVAL - 0.005
    assert throttle.failed == 0 and throttle.shown == 1  # yielding is not a failure


async def test_throttled_shows_are_cosmetic_and_other_calls_are_not() -> None:
    seen: list[bool] = []

    async def show(value: str) -> None:
        seen.append(is_cosmetic())

    throttle: Throttle[str] = Throttle(show, interval=INTERVAL)
    throttle.offer("a")
    await throttle.flush()
    assert seen == [True] and not is_cosmetic()


async def test_a_failed_show_is_logged_and_later_values_still_show() -> None:
    show = Recorder()
    show.fail_with.append(PlatformError("nope", platform="x", code=400))
    throttle: Throttle[str] = Throttle(show, interval=INTERVAL)
    throttle.offer("a")
    await throttle.flush()
    throttle.offer("b")
    await throttle.flush()
    assert [v for _, _, v in show.shows] == ["b"]


def test_escape_markdown_renders_literally() -> None:
    line = "Using *tool_name* [x](y) `z`…"
    [chunk] = render_chunks(escape_markdown(line), Capabilities(100, "chars", Markup.PLAIN))
    assert chunk.text == line


class _Balanced(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"unbalanced </{tag}>"
        self.open.pop()


@pytest.mark.parametrize(
    "reply",
    [
        "Here is code:\n\n```python\ndef f(x):\n    return x * 2\n```\n\nand **bold _it_ text** done.",
        "A [link](https://example.com/a_b) and ~~gone~~ and `inline` > quote\n> more",
    ],
)
def test_every_prefix_of_a_reply_renders_to_balanced_html(reply: str) -> None:
    for end in range(1, len(reply) + 1):
        for chunk in partial_chunks(Partial(reply[:end], status="Using tool…"), TG):
            parser = _Balanced()
            parser.feed(chunk.text)
            parser.close()
            assert not parser.open, (reply[:end], chunk.text)


def test_the_status_goes_after_the_text_in_italics() -> None:
    [chunk] = partial_chunks(Partial("Hello", status="Using current_time…"), TG)
    assert chunk.text == "Hello\n\n<i>Using current_time…</i>"
    assert chunk.plain == "Hello\n\nUsing current_time…"
    [alone] = partial_chunks(Partial("", status="Thinking"), TG)
    assert alone.text == "<i>Thinking</i>"


def test_a_trailer_that_does_not_fit_gets_a_message_of_its_own() -> None:
    chunks = render_chunks("x" * 58, SMALL)
    out = with_trailer(chunks, "(stopped)", SMALL)
    assert out[0] == chunks[0] and len(out) == 2
    assert "(stopped)" in out[1].plain


class Board:
    """In-memory messages for `EditStream`."""

    def __init__(self) -> None:
        self.messages: dict[str, str] = {}
        self.log: list[tuple[str, str]] = []
        self.ids = iter(range(1, 1000))
        self.fail_edits = 0

    async def post(self, chunk: Chunk, first: bool) -> str:
        mid = str(next(self.ids))
        self.messages[mid] = chunk.text
        self.log.append(("post", mid))
        return mid

    async def edit(self, mid: str, chunk: Chunk) -> None:
        if self.fail_edits:
            self.fail_edits -= 1
            raise PlatformError("message to edit not found", platform="x", code=400)
        self.messages[mid] = chunk.text
        self.log.append(("edit", mid))

    async def delete(self, mid: str) -> None:
        del self.messages[mid]
        self.log.append(("delete", mid))

    def stream(self, caps: Capabilities = SMALL) -> EditStream:
        ops = MessageOps(post=self.post, edit=self.edit, delete=self.delete)
        return EditStream(chat_id="c", caps=caps, ops=ops, interval=0.01)


async def test_edit_stream_settles_exactly_on_the_final_chunks_across_messages() -> None:
    board = Board()
    stream = board.stream()
    words = [f"word{n}" for n in range(40)]
    for n in range(1, len(words) + 1):
        await stream.update(" ".join(words[:n]))
        await asyncio.sleep(0.003)
    final = render_chunks(" ".join(words), SMALL)
    assert len(final) > 2
    sent = await stream.finish(final)
    assert [board.messages[mid] for mid in sent.message_ids] == [c.text for c in final]
    assert list(board.messages) == list(sent.message_ids)
    assert ("edit", "1") in board.log  # the first message was edited while written


async def test_edit_stream_final_edit_that_fails_becomes_a_new_message() -> None:
    board = Board()
    stream = board.stream()
    await stream.update("first words")
    await asyncio.sleep(0.02)
    board.fail_edits = 1
    final = render_chunks("first words and the rest", SMALL)
    sent = await stream.finish(final)
    assert [board.messages[mid] for mid in sent.message_ids] == [c.text for c in final]


async def test_edit_stream_cancel_with_note_keeps_the_text_and_without_takes_it_back() -> None:
    board = Board()
    stream = board.stream()
    await stream.update("partial answer")
    await asyncio.sleep(0.02)
    kept = await stream.cancel("(stopped)")
    assert kept is not None
    [text] = [board.messages[mid] for mid in kept.message_ids]
    assert text == "partial answer\n\n_(stopped)_"

    board = Board()
    stream = board.stream()
    await stream.update("partial answer")
    await asyncio.sleep(0.02)
    assert await stream.cancel() is None
    assert board.messages == {}
