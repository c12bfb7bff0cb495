"""One answer per message: platform retries and twin events are claimed once, with the flood
limit's count and a DM's thread read in the same round trip (`ctx.rate`, `ctx.thread_hint`).
"""

from __future__ import annotations

import structlog

from channels import metrics
from channels.adapter import HOME_REQUEST
from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.ports import AdmissionStore, DedupeStore
from channels.message import InboundMessage, Platform
from switchboard.state import Claim

__all__ = ["DedupeGate", "rate_limited"]

_log = structlog.get_logger(__name__)


def rate_limited(msg: InboundMessage) -> bool:
    """Whether the sender's flood limit counts this message: every typed one, commands too."""
    return msg.platform is not Platform.CONSOLE and msg.button is None


class DedupeGate:
    """Platform retries and twin events (Slack's message + app_mention) get one answer.

    With an `admission` store, a message the flood limit will count (`AccessAndRate`) is
    claimed and counted in one round trip; a duplicate is not counted twice (the limit counts
    a message by its own id), and the verdict waits in `ctx.rate`. Votes and Home requests,
    which leave the chain before the flood limit, are only claimed.

    A DM's thread is read in that round trip too (`ctx.thread_hint`, for `Routing`) when its
    conversation was started (only `Routing` starts one, so a command never does), and only
    while no earlier message of its chat is still on its way here: a `/new` among those could
    point the conversation at a new thread after this read."""

    def __init__(self, dedupe: DedupeStore, admission: AdmissionStore | None = None) -> None:
        self._dedupe = dedupe
        self._admission = admission

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        ids = list(msg.dedupe_ids)
        home = msg.native is not None and msg.native.name == HOME_REQUEST
        if self._admission is not None and rate_limited(msg) and msg.vote is None and not home:
            first = ctx.turn_order is None or ctx.turn_order.first
            admitted = await self._admission.admit(
                str(msg.platform),
                ids,
                scope=msg.chat_id,
                owner=ctx.entry_id,
                sender_id=msg.sender_id,
                message_id=ids[0],
                conversation=ctx.conversation if msg.is_dm and first else None,
            )
            claim, ctx.rate, ctx.thread_hint = admitted.claim, admitted.rate, admitted.thread_id
        else:
            claim = await self._dedupe.claim(
                str(msg.platform), ids, scope=msg.chat_id, owner=ctx.entry_id
            )
        if claim is Claim.DUPLICATE:
            metrics.DEDUPE_HITS.labels(platform=str(msg.platform)).inc()
            _log.info("message.deduped")
            return Outcome.DUPLICATE
        if claim is Claim.DONE:
            _log.info("message.already_answered")
            return Outcome.DUPLICATE
        return await call_next(ctx)
