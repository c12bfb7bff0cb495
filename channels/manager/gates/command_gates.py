"""The two places commands leave the chain: those that grant access (before it) and the rest."""

from __future__ import annotations

from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.gates.commands import PRE_ACCESS, CommandDesk

__all__ = ["Commands", "LinkAndHelp"]


class LinkAndHelp:
    """`/help`, `/link`, `/unlink` work without access: they are how access is gained (the
    flood limit before them still applies)."""

    def __init__(self, commands: CommandDesk) -> None:
        self._commands = commands

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        if ctx.command is not None and ctx.command.name in PRE_ACCESS:
            await self._commands.pre_access(ctx, ctx.command)
            return Outcome.ANSWERED
        return await call_next(ctx)


class Commands:
    def __init__(self, commands: CommandDesk) -> None:
        self._commands = commands

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        if ctx.command is None:
            return await call_next(ctx)
        await self._commands.run(ctx, ctx.command)
        return Outcome.ANSWERED
