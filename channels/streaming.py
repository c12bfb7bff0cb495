"""What every adapter's `ReplyStream` shares: pacing, safe partial rendering, edited messages.

A stream receives the whole reply so far as often as tokens arrive, but a platform takes an
edit about once a second. `Throttle` sits in between: it keeps only the latest value, shows the
first at once and then at most one per interval, in a background task, so `update` never waits
on the network (values that arrive while a call is in flight just replace the pending one).
A show that fails is logged, never raised: partial updates are cosmetic; a rate limit delays the
next show by its `retry_after` and the latest value is shown after it. `finish` does not go
through the throttle: it waits for the call in flight and the interval (`settle`), then makes the
final calls itself, so the final text is never dropped.

Partial markdown is rendered with the platform's own renderer (`render_chunks`): markdown-it
treats an unclosed fence as running to the end and an unclosed `**` as literal text, and the
chunker closes every frame it opens, so a half-written reply always renders to well-formed
messages; where a platform still rejects one (Telegram's "can't parse entities"), the adapter's
plain-text fallback applies to that update alone.

`EditStream` is the whole stream for platforms that show a reply by editing messages (Telegram
groups, Slack without its streaming API, Discord): the first text is sent as a message, later
texts edit it, text past one message's length continues in new messages, and `finish` settles
every message on the final chunks, sending, editing or deleting as needed.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

import structlog

from channels.adapter import Capabilities, Chunk, SentRef
from channels.render import render_chunks
from channels.render.chunking import measure_fn
from channels.send_budget import BudgetBusy, cosmetic, essential
from switchboard.errors import PlatformError, PlatformRateLimited

__all__ = [
    "EditStream",
    "MessageOps",
    "Partial",
    "Throttle",
    "escape_markdown",
    "partial_chunks",
    "with_trailer",
]

T = TypeVar("T")

_log = structlog.get_logger(__name__)
_MD_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_FINAL_ATTEMPTS = 4  # a final call rate-limited this often in a row is given up (and raised)
_MAX_FINAL_WAIT_S = 60.0


def escape_markdown(text: str) -> str:
    """`text` as markdown that renders literally (every ASCII punctuation mark escaped)."""
    return _MD_PUNCTUATION.sub(r"\\\1", text)


@dataclass(frozen=True, slots=True)
class Partial:
    """What a stream shows at one moment: the reply so far and an optional status line."""

    text: str = ""
    status: str | None = None


def with_trailer(chunks: Sequence[Chunk], line: str, caps: Capabilities) -> list[Chunk]:
    """`chunks` with `line` (ours, not the model's: a status, "(stopped)") in italics after
    them, in the last message when it fits, else in one of its own."""
    trailer = render_chunks("*" + escape_markdown(line) + "*", caps)
    if not trailer:
        return list(chunks)
    if not chunks:
        return trailer
    measure = measure_fn(caps.len_unit)
    *head, last = chunks
    joined = Chunk(last.text + "\n\n" + trailer[0].text, last.plain + "\n\n" + trailer[0].plain)
    if measure(joined.text) <= caps.max_len:
        return [*head, joined, *trailer[1:]]
    return [*chunks, *trailer]


def partial_chunks(partial: Partial, caps: Capabilities) -> list[Chunk]:
    """The reply so far as well-formed platform messages, the status line after it."""
    chunks = render_chunks(partial.text, caps) if partial.text.strip() else []
    if partial.status:
        return with_trailer(chunks, partial.status, caps)
    return chunks


class Throttle(Generic[T]):
    """Shows the latest offered value: the first at once, then at most one per `interval`
    (measured from the end of the previous show, so a slow call never bunches two). Shows run
    `cosmetic()`: one whose send budget has no room at once raises `BudgetBusy` instead of
    waiting, and is tried again an interval later."""

    def __init__(
        self,
        show: Callable[[T], Awaitable[None]],
        *,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._show = show
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._pending: tuple[T] | None = None  # boxed: a pending value may itself be None
        self._in_flight = False
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._next_at = float("-inf")  # no show before this time
        self.shown = 0  # shows that succeeded
        self.failed = 0  # shows that raised

    @property
    def closed(self) -> bool:
        return self._closed

    def offer(self, value: T) -> None:
        """Make `value` the next thing shown; returns at once."""
        if self._closed:
            return
        self._pending = (value,)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._pump(), name="stream:throttle")

    async def flush(self) -> None:
        """Wait until the latest offered value has been shown (at the usual pace)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def settle(self, *, pace: bool = True) -> None:
        """Stop: drop what is pending, let a show in flight end, and with `pace` wait out the
        interval after it, so the caller's next (final) call keeps the pace too."""
        self._closed = True
        self._pending = None
        task = self._task
        if task is not None and not task.done():
            if not self._in_flight:
                task.cancel()
            await asyncio.wait({task})
        if pace:
            delay = self._next_at - self._clock()
            if delay > 0:
                await self._sleep(delay)

    async def _pump(self) -> None:
        while self._pending is not None and not self._closed:
            delay = self._next_at - self._clock()
            if delay > 0:
                await self._sleep(delay)
                continue
            (value,) = self._pending
            self._pending = None
            self._in_flight = True
            try:
                with cosmetic():  # a partial update never queues ahead of a reply
                    await self._show(value)
                self.shown += 1
                self._next_at = self._clock() + self._interval
            except BudgetBusy:
                self._next_at = self._clock() + self._interval
                if self._pending is None:
                    self._pending = (value,)
            except PlatformRateLimited as exc:
                self.failed += 1
                wait = max(exc.retry_after or self._interval, self._interval)
                self._next_at = self._clock() + wait
                _log.warning("stream.update_rate_limited", retry_after_s=wait)
                if self._pending is None:
                    self._pending = (value,)
            except Exception as exc:  # a partial update is cosmetic; it never fails a turn
                self.failed += 1
                self._next_at = self._clock() + self._interval
                _log.warning("stream.update_failed", error=type(exc).__name__, detail=str(exc))
            finally:
                self._in_flight = False


@dataclass(frozen=True, slots=True)
class MessageOps:
    """How an `EditStream` reaches its platform: `post` one chunk as a new message (`first`:
    the reply's first message, which may quote the user's) and return its id, `edit` a message
    to a chunk (an unchanged text is not an error), `delete` one."""

    post: Callable[[Chunk, bool], Awaitable[str]]
    edit: Callable[[str, Chunk], Awaitable[None]]
    delete: Callable[[str], Awaitable[None]]


class EditStream:
    """A `ReplyStream` made of ordinary messages: sent, then edited at most once per
    `interval`, continued in new messages past `caps.max_len`."""

    def __init__(
        self,
        *,
        chat_id: str,
        caps: Capabilities,
        ops: MessageOps,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        stop_for: str = "",
    ) -> None:
        self._chat_id = chat_id
        self._stop_for = stop_for  # partial shows carry a Stop button for this user
        self._caps = caps
        self._ops = ops
        self._sleep = sleep
        self._partial = Partial()
        self._ids: list[str] = []  # the messages shown so far, oldest first
        self._texts: list[tuple[str, str, str]] = []  # what each of them shows (`_shown`)
        self._throttle: Throttle[Partial] = Throttle(
            self._show, interval=interval, clock=clock, sleep=sleep
        )

    @property
    def message_ids(self) -> tuple[str, ...]:
        return tuple(self._ids)

    async def update(self, text: str) -> None:
        self._partial = Partial(text=text)
        if text.strip():
            self._throttle.offer(self._partial)

    async def status(self, line: str) -> None:
        self._partial = Partial(text=self._partial.text, status=line)
        self._throttle.offer(self._partial)

    async def show_now(self, text: str) -> None:
        """Show `text` at once, waiting for the send budget instead of yielding it: for a
        stream taking over from a call that booked the budget and showed nothing (Slack's
        refused `chat.startStream`), so the reader is not left an interval behind."""
        self._partial = Partial(text=text, status=self._partial.status)
        if not text.strip():
            return
        with essential():
            await self._show(self._partial)

    async def finish(self, chunks: Sequence[Chunk]) -> SentRef:
        await self._throttle.settle()
        await self._settle_on(list(chunks))
        return SentRef(self._chat_id, tuple(self._ids))

    async def cancel(self, note: str | None = None) -> SentRef | None:
        await self._throttle.settle(pace=note is not None)
        if note is None:
            await self._take_back()
            return None
        text = self._partial.text
        if not text.strip() and not self._ids:
            return None
        chunks = with_trailer(
            render_chunks(text, self._caps) if text.strip() else [], note, self._caps
        )
        try:
            await self._settle_on(chunks)
        except PlatformError as exc:  # what was shown stays; only the note is missing
            _log.warning("stream.cancel_note_failed", code=exc.code)
        return SentRef(self._chat_id, tuple(self._ids)) if self._ids else None

    # -- platform calls ---------------------------------------------------------------------

    async def _show(self, partial: Partial) -> None:
        """A partial update: edit the messages whose text changed, send those that are new.
        Messages past the partial's count are left alone (the final settles them). With
        `stop_for`, the last message carries the Stop button; the final text drops it."""
        chunks = partial_chunks(partial, self._caps)
        if self._stop_for and chunks:
            chunks[-1] = replace(chunks[-1], stop_for=self._stop_for)
        for i, chunk in enumerate(chunks):
            if i < len(self._ids):
                if self._texts[i] != _shown(chunk):
                    await self._ops.edit(self._ids[i], chunk)
                    self._texts[i] = _shown(chunk)
            else:
                self._ids.append(await self._ops.post(chunk, not self._ids))
                self._texts.append(_shown(chunk))

    async def _settle_on(self, chunks: list[Chunk]) -> None:
        """Make the messages read exactly `chunks`: edit the shown ones, send the rest, delete
        shown ones the final reply no longer needs. An edit that fails (the message was
        deleted meanwhile) becomes a new message; a rate limit is waited out."""
        for i, chunk in enumerate(chunks):
            if i < len(self._ids):
                if self._texts[i] == _shown(chunk):
                    continue
                try:
                    await _patiently(functools.partial(self._ops.edit, self._ids[i], chunk))
                    self._texts[i] = _shown(chunk)
                    continue
                except PlatformError as exc:
                    if isinstance(exc, PlatformRateLimited):
                        raise
                    _log.warning("stream.final_edit_failed", code=exc.code)
                    # the rest are sent after this one, so later shown messages must go
                    await self._drop_from(i)
            posted = await _patiently(functools.partial(self._ops.post, chunk, not self._ids))
            self._ids.append(posted)
            self._texts.append(_shown(chunk))
        await self._drop_from(len(chunks))

    async def _drop_from(self, index: int) -> None:
        while len(self._ids) > index:
            message_id = self._ids.pop()
            self._texts.pop()
            try:
                await self._ops.delete(message_id)
            except PlatformError as exc:
                _log.warning("stream.delete_failed", code=exc.code)

    async def _take_back(self) -> None:
        await self._drop_from(0)


def _shown(chunk: Chunk) -> tuple[str, str, str]:
    """What a message shows: its text and its buttons (feedback under a rated answer, Stop
    under a reply being written), so a final text equal to the last partial one is still
    edited when its buttons change."""
    return chunk.text, chunk.vote_run, chunk.stop_for


async def _patiently(call: Callable[[], Awaitable[T]]) -> T:
    """One final call, retried after rate limits (the final text must not be lost to one)."""
    for attempt in range(1, _FINAL_ATTEMPTS + 1):
        try:
            return await call()
        except PlatformRateLimited as exc:
            if attempt == _FINAL_ATTEMPTS:
                raise
            wait = min(max(exc.retry_after or 1.0, 0.1), _MAX_FINAL_WAIT_S)
            _log.warning("stream.final_rate_limited", retry_after_s=wait, attempt=attempt)
            await asyncio.sleep(wait)
    raise AssertionError("unreachable")
