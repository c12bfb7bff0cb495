"""Per-chat send pacing for Telegram: one budget shared by sends and edits.

Telegram asks bots to stay near one message per second in a private chat and at most 20 messages
per minute in a group; going over earns 429s that stall the whole reply. `ChatPacer` keeps each
chat's sliding window in this process, on `channels.send_budget.LocalPacer` (a chat id is the
window's scope), whose reservations are synchronous, so concurrent senders to one chat queue up
in call order without a lock. A fleet shares the same windows in Redis instead
(`channels.pacing.SharedTelegramPacer`, which adds the bot's 30/s).

Memory: as `LocalPacer`'s: only chats with a live window are held, idle ones are swept, and never
more than `MAX_CHATS` (about 0.7 KB each, so at most ~7 MB): past that the least recently used
chat's window is dropped, at worst letting that chat's next message go out early and meet one
429, which `BotCalls` waits out and retries.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from channels.send_budget import LocalPacer, Quota, Rate

__all__ = ["MAX_CHATS", "ChatPacer", "Window"]

MAX_CHATS = 10_000  # chats whose send windows are kept (least recently used dropped past it)

Window = Rate  # at most `limit` sends in any `seconds`-long window

PRIVATE = Window(limit=1, seconds=1.0)
GROUP = Window(limit=20, seconds=60.0)
BOT = Window(limit=30, seconds=1.0)  # all chats together (Telegram's broadcast limit)


class Pacer(Protocol):
    """What the Bot API caller waits on before a send or edit: this process's `ChatPacer`, or
    a budget shared by the fleet (`channels.pacing.SharedTelegramPacer`)."""

    async def wait(self, chat_id: str) -> None: ...

    async def try_now(self, chat_id: str) -> bool:
        """Book a send only if it may go at once (a draft yields to real messages)."""
        ...

    async def hold(self, chat_id: str, seconds: float) -> None:
        """Telegram answered 429 "retry after `seconds`" for this chat: hold its sends."""
        ...


class ChatPacer:
    def __init__(
        self,
        *,
        private: Window = PRIVATE,
        group: Window = GROUP,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_chats: int = MAX_CHATS,
    ) -> None:
        self._private = private
        self._group = group
        self._windows = LocalPacer(clock=clock, sleep=sleep, max_scopes=max_chats)

    def __len__(self) -> int:
        """Chats whose send windows are held (at most `max_chats`)."""
        return len(self._windows)

    def chats(self) -> list[str]:
        """The chats whose windows are held, least recently used first."""
        return self._windows.scopes()

    def reserve(self, chat_id: str, *, only_now: bool = False) -> float | None:
        """Book the chat's next send slot; returns how long to wait before sending. With
        `only_now`, a slot that is not free at once is not booked (None)."""
        return self._windows.reserve(self._quota(chat_id), most=0.0 if only_now else None)

    async def wait(self, chat_id: str) -> None:
        """Sleep until this chat may receive one more message (or edit)."""
        await self._windows.wait(self._quota(chat_id))

    async def try_now(self, chat_id: str) -> bool:
        return await self._windows.try_now(self._quota(chat_id))

    async def hold(self, chat_id: str, seconds: float) -> None:
        await self._windows.hold(self._quota(chat_id), seconds)

    def _quota(self, chat_id: str) -> list[Quota]:
        # Telegram user (private chat) ids are positive; group and channel ids are negative.
        return [Quota(chat_id, self._group if chat_id.startswith("-") else self._private)]
