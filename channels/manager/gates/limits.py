"""What one message may hand the agent: something readable, and not too much of it."""

from __future__ import annotations

import structlog

from channels.adapter import UNSUPPORTED_TEXT
from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.replies.responder import Responder

__all__ = ["InputLimits"]

_log = structlog.get_logger(__name__)


class InputLimits:
    """Text or files (a message of stickers alone is not readable), and no more text than the
    agent should be handed in one message."""

    def __init__(self, responder: Responder, max_chars: int) -> None:
        self._say = responder
        self._max = max_chars

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        readable = any(a.kind != "sticker" for a in msg.attachments)
        if msg.button is None and not msg.text.strip() and not readable:
            await self._say.refuse(ctx.adapter, msg, UNSUPPORTED_TEXT)
            return Outcome.ANSWERED
        if len(msg.text) > self._max:
            _log.info("message.too_long", chars=len(msg.text))
            await self._say.refuse(
                ctx.adapter,
                msg,
                f"That message is too long for me ({len(msg.text):,} characters; the limit is "
                f"{self._max:,}). Please shorten it or send it in parts.",
            )
            return Outcome.ANSWERED
        return await call_next(ctx)
