"""A sender's model budget, checked before a turn is spent on them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.replies.responder import Responder
from channels.message import InboundMessage

if TYPE_CHECKING:
    from channels.usage import UsageDesk

__all__ = ["BudgetGate"]


class BudgetGate:
    """A sender over their daily or weekly model budget gets the reset time, not a turn."""

    def __init__(self, usage: UsageDesk | None, responder: Responder) -> None:
        self._usage = usage
        self._say = responder

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        adapter = ctx.adapter

        async def refuse(msg: InboundMessage, text: str) -> None:
            await self._say.refuse(adapter, msg, text)

        if self._usage is not None and not await self._usage.admit(ctx.msg, refuse):
            return Outcome.ANSWERED
        return await call_next(ctx)
