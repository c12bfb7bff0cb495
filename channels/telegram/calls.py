"""How the Telegram adapter calls the Bot API: paced, flood-wait aware, HTML with a plain fallback.

- Pacing: sends and edits to one chat share a budget (`telegram_pacing.py`).
- 429: aiogram raises `TelegramRetryAfter`; the same call is retried once per 429 after its
  `retry_after`. A 429 means Telegram sent nothing, so the retry cannot duplicate a message.
  Waits longer than `MAX_RETRY_AFTER_S` are not slept through; they surface as
  `PlatformRateLimited` so one flooded chat cannot hold a turn for minutes.
- HTML fallback: if Telegram cannot parse our entities, the same words go again as plain text.
- Errors: `translated(action)` turns aiogram exceptions into `switchboard.errors` at the adapter's
  public methods, token scrubbed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar

import structlog
from aiogram import Bot
from aiogram.exceptions import AiogramError, TelegramBadRequest, TelegramRetryAfter
from aiogram.methods import (
    AnswerCallbackQuery,
    DeleteMessage,
    DeleteWebhook,
    EditMessageText,
    GetChatMember,
    GetMe,
    GetUpdates,
    SendChatAction,
    SendMessage,
    SendMessageDraft,
    SetMessageReaction,
    SetMyCommands,
    SetWebhook,
    TelegramMethod,
)
from aiogram.methods.base import Response
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from channels.adapter import Chunk
from channels.send_budget import book
from channels.telegram.errors import is_entity_error, translate
from channels.telegram.pacing import ChatPacer, Pacer

__all__ = ["MAX_RETRY_AFTER_S", "BotCalls"]

MAX_RETRY_AFTER_S = 60
_MAX_ATTEMPTS = 4  # the first call plus one retry per 429

_log = structlog.get_logger(__name__)
T = TypeVar("T")

# aiogram validates every reply as `Response[method.__returning__]`. pydantic keeps parametrized
# generics in a weak cache, so without a strong reference the class is garbage-collected and
# rebuilt (schema and all) every few calls: about a millisecond per Bot API call. Holding the
# types we use keeps them cached for the life of the process.
_RESPONSE_TYPES = tuple(
    Response[method.__returning__]  # type: ignore[name-defined]  # a runtime subscript mypy reads as a type
    for method in (
        AnswerCallbackQuery,
        DeleteMessage,
        DeleteWebhook,
        EditMessageText,
        GetChatMember,
        GetMe,
        GetUpdates,
        SendChatAction,
        SendMessage,
        SendMessageDraft,
        SetMessageReaction,
        SetMyCommands,
        SetWebhook,
    )
)


class BotCalls:
    def __init__(self, *, bot: Bot, token: str, pacer: Pacer | None = None) -> None:
        self.bot = bot
        self._token = token
        self._pacer = pacer or ChatPacer()

    async def call(self, method: TelegramMethod[T], *, pace: str | None = None) -> T:
        """One Bot API call, paced for chat `pace` (sends and edits), retried after 429s. A
        partial update of a stream (`cosmetic()`) goes only if the budget has room now.

        The first attempt runs bare (tenacity's loop costs about 30 us per use); after a short
        flood wait, the rest go through it."""
        if pace is not None:
            await book(self._pacer, pace)
        try:
            return await self._once(method, pace)
        except TelegramRetryAfter as exc:
            if not _is_short_flood_wait(exc):
                raise
            _log.warning("telegram.flood_waited", attempt=1, wait_s=float(exc.retry_after))
            await asyncio.sleep(float(exc.retry_after))
        retrying = AsyncRetrying(
            retry=retry_if_exception(_is_short_flood_wait),
            wait=_retry_after,
            stop=stop_after_attempt(_MAX_ATTEMPTS - 1),
            before_sleep=_log_flood_wait,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                result = await self._once(method, pace)
        return result

    async def _once(self, method: TelegramMethod[T], pace: str | None) -> T:
        try:
            return await self.bot(method)
        except TelegramRetryAfter as exc:
            if pace is not None:  # the other processes hold this chat's sends too
                await self._pacer.hold(pace, float(exc.retry_after))
            raise

    async def html(
        self,
        method: type[SendMessage] | type[EditMessageText] | type[SendMessageDraft],
        fields: dict[str, Any],
        chunk: Chunk,
        *,
        pace: str,
    ) -> Any:
        """Send (or edit to) the chunk's HTML; if Telegram rejects its entities, its plain text."""
        try:
            html = method(text=chunk.text, parse_mode="HTML", **fields)
            return await self.call(html, pace=pace)
        except TelegramBadRequest as exc:
            if not is_entity_error(exc):
                raise
            _log.warning("telegram.entities_rejected", method=method.__api_method__)
        plain = method(text=chunk.plain, parse_mode=None, **fields)
        return await self.call(plain, pace=pace)

    @contextlib.contextmanager
    def translated(self, action: str) -> Iterator[None]:
        """Raise aiogram errors from the block as `switchboard.errors`, without the token."""
        try:
            yield
        except AiogramError as exc:
            raise translate(exc, action=action, token=self._token) from None


def _is_short_flood_wait(exc: BaseException) -> bool:
    return isinstance(exc, TelegramRetryAfter) and exc.retry_after <= MAX_RETRY_AFTER_S


def _retry_after(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome is not None else None
    return float(exc.retry_after) if isinstance(exc, TelegramRetryAfter) else 1.0


def _log_flood_wait(state: RetryCallState) -> None:
    attempt = state.attempt_number + 1  # the first attempt ran before the loop
    _log.warning("telegram.flood_waited", attempt=attempt, wait_s=_retry_after(state))
