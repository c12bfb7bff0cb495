"""Per-chat send pacing for Telegram: one budget shared by sends and edits.

Telegram asks bots to stay near one message per second in a private chat and at most 20 messages
per minute in a group; going over earns 429s that stall the whole reply. Each chat gets a sliding
window of reserved send times. A reservation is made synchronously (no await between reading and
appending), so concurrent senders to one chat queue up in call order without a lock, and each then
sleeps until its slot.

Memory: the table holds only chats with a live window. It is kept in least-recently-used order;
every `_SWEEP_EVERY` reservations the idle chats at its front (no slot in the last minute) are
dropped, and it never holds more than `MAX_CHATS` chats (about 0.7 KB each, so at most ~7 MB):
past that the least recently used chat's window is dropped, at worst letting that chat's next
message go out early and meet one 429, which `BotCalls` waits out and retries.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["MAX_CHATS", "ChatPacer", "Window"]

MAX_CHATS = 10_000  # chats whose send windows are kept (least recently used dropped past it)
_SWEEP_EVERY = 256  # reservations between sweeps of idle chats


@dataclass(frozen=True, slots=True)
class Window:
    """At most `limit` sends in any `seconds`-long window."""

    limit: int
    seconds: float


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
        self._clock = clock
        self._sleep = sleep
        self._max_chats = max_chats
        self._slots: OrderedDict[str, deque[float]] = OrderedDict()  # least recently used first
        self._reservations = 0

    def __len__(self) -> int:
        """Chats whose send windows are held (at most `max_chats`)."""
        return len(self._slots)

    def reserve(self, chat_id: str, *, only_now: bool = False) -> float | None:
        """Book the chat's next send slot; returns how long to wait before sending. With
        `only_now`, a slot that is not free at once is not booked (None)."""
        window = self._window(chat_id)
        now = self._clock()
        slots = self._chat_slots(chat_id)
        while slots and slots[0] <= now - window.seconds:
            slots.popleft()
        at = now if len(slots) < window.limit else max(now, slots[-window.limit] + window.seconds)
        if at > now and only_now:
            return None
        slots.append(at)
        self._reservations += 1
        if self._reservations % _SWEEP_EVERY == 0:
            self._sweep(now)
        return at - now

    async def wait(self, chat_id: str) -> None:
        """Sleep until this chat may receive one more message (or edit)."""
        delay = self.reserve(chat_id) or 0.0
        if delay > 0:
            await self._sleep(delay)

    async def try_now(self, chat_id: str) -> bool:
        return self.reserve(chat_id, only_now=True) is not None

    async def hold(self, chat_id: str, seconds: float) -> None:
        """Fill the chat's window so its next send waits until `seconds` from now."""
        window = self._window(chat_id)
        slots = self._chat_slots(chat_id)
        until = self._clock() + seconds - window.seconds
        merged = sorted([*slots, *([until] * window.limit)])
        slots.clear()
        slots.extend(merged)

    def _chat_slots(self, chat_id: str) -> deque[float]:
        """The chat's booked send times, marked most recently used (the table stays bounded)."""
        slots = self._slots.get(chat_id)
        if slots is None:
            slots = self._slots[chat_id] = deque()
            if len(self._slots) > self._max_chats:
                self._slots.popitem(last=False)
        else:
            self._slots.move_to_end(chat_id)
        return slots

    def _window(self, chat_id: str) -> Window:
        # Telegram user (private chat) ids are positive; group and channel ids are negative.
        return self._private if not chat_id.startswith("-") else self._group

    def _sweep(self, now: float) -> None:
        """Drop idle chats from the least recently used end, up to the first live one: the cost
        is the number dropped, not the table's size."""
        horizon = max(self._private.seconds, self._group.seconds)
        while self._slots:
            chat, slots = next(iter(self._slots.items()))
            if slots and slots[-1] > now - horizon:
                return
            del self._slots[chat]
