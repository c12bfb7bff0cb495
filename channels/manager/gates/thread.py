"""The message's thread, the last gate before its turn."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from channels.adapter import AckKind
from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.replies.questions import QuestionDesk
from channels.manager.replies.responder import Responder
from channels.manager.routing import ThreadResolver, creates_conversation

__all__ = ["Routing"]

_log = structlog.get_logger(__name__)


class Routing:
    """The message's thread: from the question a press answers, else the conversation table
    (read after the chat's earlier messages, so a `/new` among them counts). A text message
    that will be answered gets its receipt (👀) here, beside the turn."""

    def __init__(
        self,
        resolver: ThreadResolver,
        questions: QuestionDesk,
        responder: Responder,
        background: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self._resolver = resolver
        self._questions = questions
        self._say = responder
        self._background = background

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        if msg.button is not None:
            ctx.thread_id = await self._questions.check_press(ctx.adapter, msg)
        elif ctx.thread_hint is not None:
            ctx.thread_id = ctx.thread_hint
        else:
            if ctx.turn_order is not None:  # a `/new` just before this message comes first
                await ctx.turn_order.wait_turn()
            ctx.thread_id = await self._resolver.thread_for(
                msg, ctx.conversation, create=creates_conversation(msg)
            )
        if ctx.thread_id is None:
            if msg.button is None:
                _log.info("message.ignored", reason="not_addressed")
            return Outcome.ANSWERED
        structlog.contextvars.bind_contextvars(thread_id=ctx.thread_id)
        if msg.button is None:
            self._background(self._say.acknowledge(ctx.adapter, msg, AckKind.RECEIVED))
        return await call_next(ctx)
