"""Telegram replies shown while they are written.

Private chats use drafts (`sendMessageDraft`, Bot API 9.3): an animated preview that is not a
message, so nothing has to be cleaned up; the reply is then sent as ordinary messages, exactly as
the non-streaming path sends it (the draft disappears when the bot sends). Drafts exist only in
private chats, so groups and forum topics get an edited message instead (`EditStream`).

Every draft, send, edit and delete goes through `BotCalls`, so they share the chat's pacing
budget (in production the fleet-wide Redis windows: 1/s in a private chat, 20/min in a group,
30/s for the bot), 429s are waited out, and HTML Telegram cannot parse falls back to plain text
for that call. A draft or partial edit never waits for that budget (it runs `cosmetic()`, in
the stream's throttle): it goes only when there is room at once and is otherwise tried again a
second later, so under load drafts yield to the replies themselves.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

import structlog
from aiogram.exceptions import TelegramBadRequest
from aiogram.methods import DeleteMessage, EditMessageText, SendMessageDraft

from channels.adapter import Capabilities, Chunk, SentRef
from channels.message import ReplyTarget
from channels.render import render_chunks
from channels.streaming import (
    EditStream,
    MessageOps,
    Partial,
    Throttle,
    partial_chunks,
    with_trailer,
)
from channels.telegram.calls import BotCalls
from channels.telegram.errors import is_not_modified
from switchboard.errors import PlatformError

__all__ = ["DRAFT_INTERVAL_S", "EDIT_INTERVAL_S", "DraftStream", "edit_stream"]

DRAFT_INTERVAL_S = 1.0  # Telegram's pace for a private chat: about one message per second
EDIT_INTERVAL_S = 1.0  # groups: "about once a second"; the group window (20/min) may slow it

SendChunks = Callable[[ReplyTarget, Sequence[Chunk]], Awaitable[SentRef]]

_log = structlog.get_logger(__name__)


def _thread_fields(target: ReplyTarget) -> dict[str, Any]:
    fields: dict[str, Any] = {"chat_id": int(target.chat_id)}
    if target.is_topic and target.thread_anchor:
        fields["message_thread_id"] = int(target.thread_anchor)
    return fields


class DraftStream:
    """A private chat's reply as a draft, then sent whole. The draft shows the last message's
    worth of the reply so far (drafts hold one message)."""

    def __init__(
        self, *, api: BotCalls, target: ReplyTarget, caps: Capabilities, send: SendChunks
    ) -> None:
        self._api = api
        self._target = target
        self._caps = caps
        self._send = send
        self._draft_id = secrets.randbelow(2**31 - 1) + 1  # non-zero, one per reply
        self._partial = Partial()
        self._throttle: Throttle[Partial] = Throttle(self._show, interval=DRAFT_INTERVAL_S)

    async def update(self, text: str) -> None:
        self._partial = Partial(text=text)
        if text.strip():
            self._throttle.offer(self._partial)

    async def status(self, line: str) -> None:
        self._partial = Partial(text=self._partial.text, status=line)
        self._throttle.offer(self._partial)

    async def finish(self, chunks: Sequence[Chunk]) -> SentRef:
        await self._throttle.settle(pace=False)  # the chat's pacer spaces the send
        if not chunks:
            return SentRef(self._target.chat_id, ())
        return await self._send(self._target, chunks)

    async def cancel(self, note: str | None = None) -> SentRef | None:
        """Without a note the draft just stops (Telegram drops it); with one, what was
        written so far is kept as a message, the note after it."""
        await self._throttle.settle(pace=False)
        text = self._partial.text
        if note is None or not text.strip():
            return None
        chunks = with_trailer(render_chunks(text, self._caps), note, self._caps)
        try:
            return await self._send(self._target, chunks)
        except PlatformError as exc:
            _log.warning("telegram.stream_cancel_failed", code=exc.code)
            return None

    async def _show(self, partial: Partial) -> None:
        chunks = partial_chunks(partial, self._caps)
        if not chunks:
            return
        # Telegram's own Stop button on the draft; pressed, it stays on screen and the bot gets
        # a `stopped_message_generation` update (`telegram/stop.py`), which stops the run
        fields = {
            **_thread_fields(self._target),
            "draft_id": self._draft_id,
            "can_stop": True,
            "keep_on_stop": True,
        }
        with self._api.translated("sendMessageDraft"):
            await self._api.html(SendMessageDraft, fields, chunks[-1], pace=self._target.chat_id)


def edit_stream(
    *, api: BotCalls, target: ReplyTarget, caps: Capabilities, send: SendChunks
) -> EditStream:
    """A group's or forum topic's reply as a message edited about once a second."""

    async def post(chunk: Chunk, first: bool) -> str:
        where = target if first else replace(target, reply_to_id=None)
        sent = await send(where, [chunk])
        return sent.message_ids[0]

    async def edit(message_id: str, chunk: Chunk) -> None:
        fields = {"chat_id": int(target.chat_id), "message_id": int(message_id)}
        with api.translated("editMessageText"):
            try:
                await api.html(EditMessageText, fields, chunk, pace=target.chat_id)
            except TelegramBadRequest as exc:
                if not is_not_modified(exc):
                    raise

    async def delete(message_id: str) -> None:
        with api.translated("deleteMessage"):
            await api.call(DeleteMessage(chat_id=int(target.chat_id), message_id=int(message_id)))

    return EditStream(
        chat_id=target.chat_id,
        caps=caps,
        ops=MessageOps(post=post, edit=edit, delete=delete),
        interval=EDIT_INTERVAL_S,
    )
