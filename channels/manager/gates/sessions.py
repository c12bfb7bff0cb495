"""The conversation a message belongs to under its binding's `sessions` (`channels.bindings`):
in the chain only when a bindings file is set, before anything asks for the conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from channels.bindings.sessions import session_key
from channels.manager.context import MessageContext, Next, Outcome

if TYPE_CHECKING:
    from channels.bindings import BindingResolver

__all__ = ["SessionsGate"]


class SessionsGate:
    def __init__(self, bindings: BindingResolver) -> None:
        self._bindings = bindings

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        if not msg.is_dm and msg.vote is None:
            sessions = (await self._bindings.effective(msg)).get("sessions")
            if sessions is not None:
                ctx.conversation = session_key(msg, sessions)
        return await call_next(ctx)
