"""Slack replies shown while they are written: the streaming API, or edits where it is refused.

`chat.startStream` / `chat.appendStream` / `chat.stopStream` show the model's markdown growing in
the reply thread (Slack renders the markdown itself, so a half-written fence is its concern).
The stream is append-only: when the text so far stops extending what was appended (it should
not, the model only adds), appending stops and `finish` puts things right. `finish` stops the
stream and then edits the message to the first final chunk, the same mrkdwn the non-streaming
path sends, and posts the rest after it. A status line cannot be taken back out of an
append-only stream, so statuses are shown only in the edit mode.

The streaming API needs a thread (`thread_ts`) and, outside DMs, the recipient; a top-level DM,
or a workspace or app without the feature (`not_allowed`, `feature_not_enabled`, an unknown
method, ...), falls back to `chat.postMessage` + `chat.update` at a pace Slack's Tier 3 limit on
`chat.update` (about 50 a minute) allows. A refusal is remembered per channel, so later replies
there go straight to edits.

Every call that shows something waits on the adapter's send budget first (`SlackPacing`): the
stream's updates, its final messages and any other reply or notice in the channel share it, so a
busy channel slows the stream instead of meeting 429s.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from channels.adapter import Capabilities, Chunk, SentRef
from channels.message import ReplyTarget
from channels.slack.blocks import answer_blocks, stop_blocks
from channels.slack.pacing import SlackPacing
from channels.streaming import EditStream, MessageOps, Partial, Throttle, escape_markdown
from switchboard.errors import PlatformError, PlatformRateLimited

__all__ = ["APPEND_INTERVAL_S", "EDIT_INTERVAL_S", "Refusals", "SlackStream", "chunk_blocks"]

APPEND_INTERVAL_S = 1.0  # appends to the stream
EDIT_INTERVAL_S = 1.2  # chat.update is Tier 3: about 50 a minute
_MAX_STREAMED = 12_000  # markdown appended at most; the rest appears when the reply settles
_REMEMBERED = 4096

Api = Callable[[Awaitable[AsyncSlackResponse]], Awaitable[AsyncSlackResponse]]
Post = Callable[..., Awaitable[str]]  # (target, text, *, blocks=None) -> the message's ts

_log = structlog.get_logger(__name__)


def chunk_blocks(chunk: Chunk) -> list[dict[str, Any]] | None:
    """The blocks a message needs beyond its text: a reply being written carries a Stop
    button, an answer that can be rated Slack's feedback buttons; any other message none."""
    if chunk.stop_for:
        return stop_blocks(chunk.text, chunk.stop_for)
    return answer_blocks(chunk.text, chunk.vote_run) if chunk.vote_run else None


class Refusals:
    """Channels where Slack refused the streaming API (bounded, least recently refused
    forgotten first), so their replies skip the attempt."""

    def __init__(self, size: int = _REMEMBERED) -> None:
        self._size = size
        self._channels: OrderedDict[str, str] = OrderedDict()

    def __contains__(self, channel: object) -> bool:
        return channel in self._channels

    def add(self, channel: str, code: str) -> None:
        self._channels[channel] = code
        self._channels.move_to_end(channel)
        while len(self._channels) > self._size:
            self._channels.popitem(last=False)


class SlackStream:
    """One reply: Slack's streaming API while it is accepted, else an `EditStream`."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        api: Api,
        post: Post,
        pacing: SlackPacing,
        target: ReplyTarget,
        caps: Capabilities,
        refusals: Refusals,
        recipient_id: str | None = None,
        working: Callable[[ReplyTarget, str], Awaitable[bool]] | None = None,
        settled: Callable[[ReplyTarget], Awaitable[None]] | None = None,
    ) -> None:
        self._settled = settled  # the agent session goes back to `active` with the reply
        self._working = working  # the assistant thread's status line (`slack/assistant.py`)
        self._client = client
        self._api = api
        self._post = post
        self._pacing = pacing
        self._target = target
        self._caps = caps
        self._refusals = refusals
        self._recipient_id = recipient_id
        self._ts: str | None = None  # the streamed message, once started
        self._appended = ""  # the markdown Slack has been given
        self._diverged = False
        self._partial = Partial()
        self._edits: EditStream | None = None
        usable = bool(target.thread_anchor) and target.chat_id not in refusals
        if not usable:
            self._edits = self._edit_stream()
        self._throttle: Throttle[str] = Throttle(self._append, interval=APPEND_INTERVAL_S)

    @property
    def message_ids(self) -> tuple[str, ...]:
        """The messages the reply shows so far: what `finish` edits rather than sends."""
        if self._edits is not None:
            return self._edits.message_ids
        return (self._ts,) if self._ts else ()

    async def update(self, text: str) -> None:
        self._partial = Partial(text=text)
        if self._edits is not None:
            await self._edits.update(text)
        elif text.strip():
            self._throttle.offer(text)

    async def status(self, line: str) -> None:
        self._partial = Partial(text=self._partial.text, status=line)
        if self._edits is not None:
            await self._edits.status(line)

    async def working(self, line: str) -> None:
        """A tool step as the assistant thread's status ("Using current_time…"), at once;
        nothing outside assistant threads."""
        if self._working is not None:
            await self._working(self._target, line)

    async def finish(self, chunks: Sequence[Chunk]) -> SentRef:
        sent = await self._finish(chunks)
        if self._settled is not None:
            await self._settled(self._target)
        return sent

    async def cancel(self, note: str | None = None) -> SentRef | None:
        kept = await self._cancel(note)
        if note is not None and self._settled is not None:
            await self._settled(self._target)
        return kept

    async def _finish(self, chunks: Sequence[Chunk]) -> SentRef:
        await self._throttle.settle()
        if self._edits is not None:
            return await self._edits.finish(chunks)
        ts = self._ts
        if ts is None:  # nothing was streamed
            ids = [await self._post_chunk(chunk) for chunk in chunks]
            return SentRef(self._target.chat_id, tuple(ids))
        await self._stop(ts)
        if not chunks:
            await self._delete(ts)
            return SentRef(self._target.chat_id, ())
        try:
            await self._pacing.update(self._target.chat_id, self._target.workspace_id)
            await self._api(
                self._client.chat_update(
                    channel=self._target.chat_id,
                    ts=ts,
                    text=chunks[0].text,
                    blocks=chunk_blocks(chunks[0]) or [],
                )
            )
            ids = [ts]
        except PlatformError as exc:
            if isinstance(exc, PlatformRateLimited):
                raise
            _log.warning("slack.stream_final_edit_failed", code=exc.code)
            await self._delete(ts)
            ids = [await self._post_chunk(chunks[0])]
        ids += [await self._post_chunk(chunk) for chunk in chunks[1:]]
        return SentRef(self._target.chat_id, tuple(ids))

    async def _cancel(self, note: str | None) -> SentRef | None:
        await self._throttle.settle(pace=note is not None)
        if self._edits is not None:
            return await self._edits.cancel(note)
        ts = self._ts
        if ts is None:
            return None
        if note is None:
            await self._stop(ts)
            await self._delete(ts)
            return None
        await self._stop(ts, tail="\n\n_" + escape_markdown(note) + "_")
        return SentRef(self._target.chat_id, (ts,))

    # -- Slack calls ------------------------------------------------------------------------

    async def _post_chunk(self, chunk: Chunk) -> str:
        return str(await self._post(self._target, chunk.text, blocks=chunk_blocks(chunk)))

    async def _append(self, text: str) -> None:
        if self._edits is not None:
            return
        if self._ts is None:
            await self._start(text)
            return
        if self._diverged or len(self._appended) >= _MAX_STREAMED:
            return
        if not text.startswith(self._appended):
            self._diverged = True
            _log.info("slack.stream_diverged")
            return
        delta = text[len(self._appended) : _MAX_STREAMED]
        if not delta:
            return
        await self._pacing.post(self._target.chat_id)
        await self._api(
            self._client.chat_appendStream(
                channel=self._target.chat_id, ts=self._ts, markdown_text=delta
            )
        )
        self._appended += delta

    async def _start(self, text: str) -> None:
        first = text[:_MAX_STREAMED]
        extra: dict[str, Any] = {}
        if self._recipient_id:
            extra["recipient_user_id"] = self._recipient_id
            if self._target.workspace_id:
                extra["recipient_team_id"] = self._target.workspace_id
        await self._pacing.post(self._target.chat_id)
        try:
            resp = await self._api(
                self._client.chat_startStream(
                    channel=self._target.chat_id,
                    thread_ts=str(self._target.thread_anchor),
                    markdown_text=first,
                    **extra,
                )
            )
        except PlatformError as exc:
            if isinstance(exc, PlatformRateLimited):
                raise  # the throttle waits and tries again with the latest text
            self._refusals.add(self._target.chat_id, str(exc.code))
            _log.info("slack.stream_refused", code=exc.code)
            self._edits = self._edit_stream()
            try:  # what startStream would have shown, posted now: its budget went to nothing
                await self._edits.show_now(text)
            except PlatformError as exc:
                if isinstance(exc, PlatformRateLimited):
                    raise
                _log.warning("slack.stream_fallback_failed", code=exc.code)
            if self._partial.text != text:
                await self._edits.update(self._partial.text)
            if self._partial.status:
                await self._edits.status(self._partial.status)
            return
        self._ts = str(resp.get("ts") or "")
        self._appended = first

    async def _stop(self, ts: str, *, tail: str | None = None) -> None:
        await self._pacing.post(self._target.chat_id)
        try:
            await self._api(
                self._client.chat_stopStream(
                    channel=self._target.chat_id, ts=ts, markdown_text=tail
                )
            )
        except PlatformError as exc:  # already stopped, or timed out by Slack
            _log.warning("slack.stream_stop_failed", code=exc.code)

    async def _delete(self, ts: str) -> None:
        try:
            await self._api(self._client.chat_delete(channel=self._target.chat_id, ts=ts))
        except PlatformError as exc:
            _log.warning("slack.stream_delete_failed", code=exc.code)

    def _edit_stream(self) -> EditStream:
        target = self._target

        async def post(chunk: Chunk, first: bool) -> str:
            return await self._post_chunk(chunk)

        async def edit(message_id: str, chunk: Chunk) -> None:
            await self._pacing.update(target.chat_id, target.workspace_id)
            await self._api(
                self._client.chat_update(
                    channel=target.chat_id,
                    ts=message_id,
                    text=chunk.text,
                    blocks=chunk_blocks(chunk) or [],
                )
            )

        async def delete(message_id: str) -> None:
            await self._api(self._client.chat_delete(channel=target.chat_id, ts=message_id))

        return EditStream(
            chat_id=target.chat_id,
            caps=self._caps,
            ops=MessageOps(post=post, edit=edit, delete=delete),
            interval=EDIT_INTERVAL_S,
            stop_for=target.recipient_id,
        )
