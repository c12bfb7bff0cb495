"""The flood limit and linked access, and which message is a command."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING

import structlog

from channels.commands import DEFAULT_PREFIX, CommandForm, parse_command
from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.gates.commands import PRE_ACCESS
from channels.manager.gates.dedupe import rate_limited
from channels.manager.ports import RateStore
from channels.manager.replies.responder import Responder
from channels.manager.routing import ThreadResolver, creates_conversation
from switchboard.state import RateDecision

if TYPE_CHECKING:
    from channels.access import AccessGate

__all__ = ["RATE_TEXT", "AccessAndRate"]

_log = structlog.get_logger(__name__)

RATE_TEXT = "You're sending messages too fast; I'll skip some. Try again in a minute."


class AccessAndRate:
    """The per-sender flood limit (for every typed message, commands included) and linked
    access (for all but the commands that grant it), read in one round trip of wall time.
    Commands are recognised here; `!stop` or `@bot stop` unaddressed (a thread reply on Slack)
    is a command only in a conversation of ours, or a stranger's thread would get answers."""

    def __init__(
        self,
        access: AccessGate | None,
        rate: RateStore,
        responder: Responder,
        *,
        resolver: ThreadResolver | None = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self._access = access
        self._rate = rate
        self._say = responder
        self._resolver = resolver
        self._prefix = prefix

    async def _parse(self, ctx: MessageContext) -> None:
        msg = ctx.msg
        command = parse_command(msg.text, prefix=self._prefix, addressed=msg.mentions_bot)
        if (
            command is not None
            and command.form is not CommandForm.SLASH
            and msg.native is None
            and not creates_conversation(msg)
            and self._resolver is not None
            and await self._resolver.thread_for(msg, ctx.conversation, create=False) is None
        ):
            command = None
        ctx.command = command

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        if msg.button is None:
            await self._parse(ctx)
        grants_access = ctx.command is not None and ctx.command.name in PRE_ACCESS
        if ctx.rate is not None:  # counted with the dedupe claim
            counted: Awaitable[RateDecision] = _decided(ctx.rate)
        elif rate_limited(msg):
            counted = self._rate.hit(str(msg.platform), msg.sender_id, msg.dedupe_ids[0])
        else:
            counted = _decided(RateDecision.ALLOW)
        decision, allowed = await asyncio.gather(
            counted, _granted() if grants_access else self._allowed(ctx)
        )
        if decision is not RateDecision.ALLOW:
            _log.info("message.rate_limited", decision=str(decision))
            if decision is RateDecision.NOTIFY or msg.native is not None:  # a command waits
                await self._say.refuse(ctx.adapter, msg, RATE_TEXT)
            return Outcome.ANSWERED
        if not allowed:
            return Outcome.ANSWERED
        return await call_next(ctx)

    async def _allowed(self, ctx: MessageContext) -> bool:
        if self._access is None:
            return True
        decision = await self._access.check(ctx.msg)
        if decision.allowed:
            return True
        _log.info("message.denied", notice=decision.notice is not None)
        if decision.notice:
            await ctx.adapter.notify(ctx.msg, decision.notice)
        return False


async def _decided(decision: RateDecision) -> RateDecision:
    return decision


async def _granted() -> bool:
    return True
