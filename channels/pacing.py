"""Platform send budgets shared by every process of the fleet (Redis), for adapters that would
otherwise count only their own sends: two replicas each keeping under a platform's limits together
exceed them.

`SharedPacer` books the quotas an adapter names (`channels.send_budget`) in Redis, one script per
call; the Slack and Discord adapters take it as their `Pacer`. `SharedTelegramPacer` is the same
budget behind the Telegram adapter's per-chat `Pacer` protocol. If Redis cannot be reached a send
is paced by this process alone rather than not sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog

from channels.send_budget import LocalPacer, Pacer, Quota
from storage import SendWindow, SendWindows
from switchboard.errors import StorageError

__all__ = ["SharedPacer", "SharedTelegramPacer"]

_log = structlog.get_logger(__name__)


class SharedPacer:
    """Quotas counted by the fleet in one owner's Redis windows (`SendWindows`); while Redis
    errors, by `fallback` (this process's windows), with a warning per send."""

    def __init__(self, windows: SendWindows, *, fallback: Pacer | None = None) -> None:
        self._windows = windows
        self._fallback = fallback or LocalPacer()

    async def wait(self, quotas: Sequence[Quota]) -> None:
        try:
            delay = await self._windows.reserve(_windows(quotas))
        except StorageError as exc:
            _log.warning("pacing.shared_unavailable", error=str(exc))
            await self._fallback.wait(quotas)
            return
        if delay:
            await asyncio.sleep(delay)

    async def try_now(self, quotas: Sequence[Quota]) -> bool:
        try:
            return await self._windows.reserve(_windows(quotas), most_s=0.0) is not None
        except StorageError as exc:
            _log.warning("pacing.shared_unavailable", error=str(exc))
            return await self._fallback.try_now(quotas)

    async def hold(self, quotas: Sequence[Quota], seconds: float) -> None:
        try:
            await self._windows.hold(_windows(quotas), seconds)
        except StorageError as exc:
            _log.warning("pacing.shared_unavailable", error=str(exc))
            await self._fallback.hold(quotas, seconds)


class SharedTelegramPacer:
    """Telegram's per-bot (30/s), per-private-chat (1/s) and per-group (20/min) windows."""

    def __init__(self, windows: SendWindows) -> None:
        # Imported here: the Telegram package loads aiogram, which Slack- or Discord-only
        # processes importing this module need not pay for.
        from channels.telegram.pacing import BOT, GROUP, PRIVATE

        self._shared = SharedPacer(windows)
        self._bot = Quota("all", BOT)
        self._private = PRIVATE
        self._group = GROUP

    async def wait(self, chat_id: str) -> None:
        await self._shared.wait(self._quotas(chat_id))

    async def try_now(self, chat_id: str) -> bool:
        return await self._shared.try_now(self._quotas(chat_id))

    async def hold(self, chat_id: str, seconds: float) -> None:
        """Telegram's 429 for a chat: that chat waits, in every process (not the whole bot)."""
        await self._shared.hold(self._quotas(chat_id)[1:], seconds)

    def _quotas(self, chat_id: str) -> list[Quota]:
        rate = self._group if chat_id.startswith("-") else self._private
        return [self._bot, Quota(f"c:{chat_id}", rate)]


def _windows(quotas: Sequence[Quota]) -> list[SendWindow]:
    return [SendWindow(q.scope, q.rate.limit, q.rate.seconds) for q in quotas]
