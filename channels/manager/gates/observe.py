"""Observed messages (a Telegram group message not addressed to the bot), kept for later turns'
context (`turns/history.py` reads them back) and finished before any other gate."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from channels import metrics
from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.ports import ContextStore
from channels.manager.turns.history import as_context, observed_place

if TYPE_CHECKING:
    from channels.access import AccessGate

__all__ = ["ObserveGate"]

_log = structlog.get_logger(__name__)


class ObserveGate:
    """First in the chain: a message the adapter passed on only to be seen (`observed`: a
    Telegram group message not addressed to the bot) is recorded for later turns' context and
    finished here, so it never meets dedupe, the flood limit, access notices or a turn. Chats
    that are not admitted leave no record (checked silently: no notice, no notice budget)."""

    def __init__(
        self,
        store: ContextStore | None,
        access: AccessGate | None,
        *,
        keep: int,
    ) -> None:
        self._store = store
        self._access = access
        self._keep = keep

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        if not msg.observed:
            return await call_next(ctx)
        place = observed_place(msg)
        if self._store is None or self._keep <= 0 or place is None:
            return Outcome.OBSERVED
        if self._access is not None and not await self._access.allows(msg):
            return Outcome.OBSERVED
        await self._store.observe(*place, as_context(msg), keep=self._keep)
        metrics.CONTEXT_OBSERVED.labels(platform=str(msg.platform)).inc()
        _log.debug("message.observed")
        return Outcome.OBSERVED
