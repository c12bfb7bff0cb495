"""Long polling that appends a `getUpdates` batch to the inbox together, and confirms it only then.

aiogram's polling hands a batch over one update at a time and asks for the next batch, whose
offset confirms this one, after the last. So the handlers only collect what they build
(`add`), and this request middleware (aiogram's public session-middleware API) appends the
collected messages just before the next `getUpdates` goes out: all at once, so the
auto-pipelining Redis client (`storage.autopipeline`) sends them in one round trip, in the order
Telegram gave them, and the intake reads them in one `XREADGROUP`. A message whose append
failed is then retried, in order, until it is taken (`deliver_until_taken`); the request waits
meanwhile. The offset therefore never confirms an update that is not in the inbox, as when each
handler appended its own message, and a burst of 100 updates costs one round trip, not 100.

Order within a chat holds: the appends are queued in the batch's order on one connection, and a
failure that stops one append (the shard full, Redis unreachable) stops every later one of its
shard too, so what is retried is the tail of each chat's messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog
from aiogram import Bot
from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.methods import GetUpdates, Response, TelegramMethod
from aiogram.methods.base import TelegramType

from channels.adapter import Deliver, deliver_until_taken
from channels.message import InboundMessage
from switchboard.errors import SwitchboardError

__all__ = ["PolledBatch"]

_log = structlog.get_logger(__name__)


class PolledBatch(BaseRequestMiddleware):
    def __init__(self, deliver: Deliver, *, stopping: Callable[[], bool]) -> None:
        self._deliver = deliver
        self._stopping = stopping
        self._collected: list[InboundMessage] = []

    def add(self, msg: InboundMessage) -> None:
        """A message of the batch being handed over; appended before the next `getUpdates`."""
        self._collected.append(msg)

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        if isinstance(method, GetUpdates):
            await self.deliver_collected()
        return await make_request(bot, method)

    async def deliver_collected(self) -> bool:
        """Append what was collected; False if the adapter stopped before all of it was taken
        (the rest is then not confirmed either: no `getUpdates` follows a stop)."""
        batch, self._collected = self._collected, []
        if not batch:
            return True
        results: list[Any] = await asyncio.gather(
            *(self._deliver(msg) for msg in batch), return_exceptions=True
        )
        for msg, result in zip(batch, results, strict=True):
            if result is None:
                continue
            if isinstance(result, SwitchboardError):
                if not await deliver_until_taken(self._deliver, msg, stopping=self._stopping):
                    return False
            elif isinstance(result, Exception):  # a bug: logged; the update is not retried
                _log.error("message.not_taken", chat_id=msg.chat_id, exc_info=result)
            else:
                raise result  # cancelled
        return True
