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

One update aiogram cannot validate (a field newer or stricter than the pinned aiogram, a shape
Telegram got wrong) fails the whole `getUpdates` response in aiogram, which then asks for the same
offset again, with backoff, forever: every chat stalls and each retry logs the batch. So a
response that does not validate is validated again update by update (`_salvaged`): the others go
on, in order; the bad one is skipped, logged once by id, kind and the failing field's location
(never its values: other people's messages), and the next offset is moved past it. A response
that is not a batch at all is raised again with its content withheld.
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
from aiogram.exceptions import ClientDecodeError
from aiogram.methods import GetUpdates, Response, TelegramMethod
from aiogram.methods.base import TelegramType
from aiogram.types import Update
from pydantic import ValidationError

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
        self._skip_through: int | None = None  # the newest update skipped as unreadable

    def add(self, msg: InboundMessage) -> None:
        """A message of the batch being handed over; appended before the next `getUpdates`."""
        self._collected.append(msg)

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        polled = method if isinstance(method, GetUpdates) else None
        if polled is None:
            return await make_request(bot, method)
        await self.deliver_collected()
        if self._skip_through is not None and (polled.offset or 0) <= self._skip_through:
            polled.offset = self._skip_through + 1  # aiogram reuses its GetUpdates
        try:
            return await make_request(bot, method)
        except ClientDecodeError as exc:
            salvaged = self._salvaged(exc.data, bot)
            if salvaged is None:
                raise ClientDecodeError(
                    exc.message, _Withheld(exc.original), "(withheld)"
                ) from None
            # the chain carries the result, not the `Response` its annotation names
            return salvaged  # type: ignore[return-value]

    def _salvaged(self, data: Any, bot: Bot) -> list[Update] | None:
        """The batch's readable updates, or None when `data` is not a `getUpdates` batch."""
        if not (isinstance(data, dict) and data.get("ok") is True):
            return None
        items = data.get("result")
        if not isinstance(items, list):
            return None
        updates: list[Update] = []
        for item in items:
            try:
                updates.append(Update.model_validate(item, context={"bot": bot}))
            except ValidationError as exc:
                self._skip(item, exc)
        return updates

    def _skip(self, item: Any, exc: ValidationError) -> None:
        update_id = item.get("update_id") if isinstance(item, dict) else None
        if isinstance(update_id, int) and not isinstance(update_id, bool):
            self._skip_through = max(update_id, self._skip_through or update_id)
        _log.error(
            "telegram.update_skipped",
            update_id=update_id,
            kind=next((k for k in item if k != "update_id"), None)
            if isinstance(item, dict)
            else type(item).__name__,
            errors=[
                {"loc": ".".join(map(str, e["loc"])), "type": e["type"]}
                for e in exc.errors(include_url=False, include_input=False)[:5]
            ],
        )

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


class _Withheld(Exception):
    """The cause of a response that could not be read, by type only: pydantic's and json's
    messages quote the content, which holds other people's messages."""

    def __init__(self, original: Exception) -> None:
        super().__init__(type(original).__name__)
