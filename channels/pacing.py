"""Platform send budgets shared by every process of the fleet (Redis), for adapters that would
otherwise count only their own sends: two replicas each keeping under Telegram's limits together
exceed them."""

from __future__ import annotations

import asyncio

import structlog

from channels.telegram.pacing import BOT, GROUP, PRIVATE, ChatPacer
from storage import SendWindow, SendWindows
from switchboard.errors import StorageError

__all__ = ["SharedTelegramPacer"]

_log = structlog.get_logger(__name__)


class SharedTelegramPacer:
    """Telegram's per-bot (30/s), per-private-chat (1/s) and per-group (20/min) windows, one
    Redis script per send. If Redis cannot be reached the send is paced by this process alone
    rather than not sent."""

    def __init__(self, windows: SendWindows) -> None:
        self._windows = windows
        self._fallback = ChatPacer()
        self._bot = SendWindow("all", BOT.limit, BOT.seconds)

    async def wait(self, chat_id: str) -> None:
        window = GROUP if chat_id.startswith("-") else PRIVATE
        chat = SendWindow(f"c:{chat_id}", window.limit, window.seconds)
        try:
            delay = await self._windows.reserve([self._bot, chat])
        except StorageError as exc:
            _log.warning("pacing.shared_unavailable", error=str(exc))
            await self._fallback.wait(chat_id)
            return
        if delay > 0:
            await asyncio.sleep(delay)
