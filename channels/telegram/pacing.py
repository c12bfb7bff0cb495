"""Per-chat send pacing for Telegram: one budget shared by sends and edits.

Telegram asks bots to stay near one message per second in a private chat and at most 20 messages
per minute in a group; going over earns 429s that stall the whole reply. Each chat gets a sliding
window of reserved send times. A reservation is made synchronously (no await between reading and
appending), so concurrent senders to one chat queue up in call order without a lock, and each then
sleeps until its slot.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["ChatPacer", "Window"]

_SWEEP_EVERY = 256  # reservations between sweeps of idle chats, so the table cannot grow forever


@dataclass(frozen=True, slots=True)
class Window:
    """At most `limit` sends in any `seconds`-long window."""

    limit: int
    seconds: float


PRIVATE = Window(limit=1, seconds=1.0)
GROUP = Window(limit=20, seconds=60.0)


class ChatPacer:
    def __init__(
        self,
        *,
        private: Window = PRIVATE,
        group: Window = GROUP,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._private = private
        self._group = group
        self._clock = clock
        self._sleep = sleep
        self._slots: dict[str, deque[float]] = {}
        self._reservations = 0

    def reserve(self, chat_id: str) -> float:
        """Book the chat's next send slot; returns how long to wait before sending."""
        window = self._window(chat_id)
        now = self._clock()
        slots = self._slots.setdefault(chat_id, deque())
        while slots and slots[0] <= now - window.seconds:
            slots.popleft()
        at = now if len(slots) < window.limit else max(now, slots[-window.limit] + window.seconds)
        slots.append(at)
        self._reservations += 1
        if self._reservations % _SWEEP_EVERY == 0:
            self._sweep(now)
        return at - now

    async def wait(self, chat_id: str) -> None:
        """Sleep until this chat may receive one more message (or edit)."""
        delay = self.reserve(chat_id)
        if delay > 0:
            await self._sleep(delay)

    def _window(self, chat_id: str) -> Window:
        # Telegram user (private chat) ids are positive; group and channel ids are negative.
        return self._private if not chat_id.startswith("-") else self._group

    def _sweep(self, now: float) -> None:
        horizon = max(self._private.seconds, self._group.seconds)
        idle = [
            chat for chat, slots in self._slots.items() if not slots or slots[-1] <= now - horizon
        ]
        for chat in idle:
            del self._slots[chat]
