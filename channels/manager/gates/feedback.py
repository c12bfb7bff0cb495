"""Votes on answers: placed on their answer, counted, never handed to a thread.

A vote arrives like any message (through the inbox, deduped on the press or update that carried
it). A feedback button names its answer's run; a reaction names only the bot message, which the
turn that sent it recorded with its run and asker (`VoteStore.remember_answer`, only where
reactions are the vote), and only the asker's reaction counts. One vote per user per answer:
a later one replaces it, a reaction taken back withdraws it. `switchboard_feedback_total` counts
votes cast and changed, never a repeat of the same one.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import structlog

from channels import metrics
from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.ports import ThreadStore
from channels.message import InboundMessage, Vote
from switchboard.feedback import AnswerRef, VoteRecord, VoteValue

__all__ = ["FeedbackGate", "OnVote", "VoteStore"]

_log = structlog.get_logger(__name__)
_SAME = 0  # `VoteStore.record`: this vote was already stored

OnVote = Callable[[VoteRecord], Awaitable[None]]
"""Told of every new or changed vote (LangSmith feedback when tracing is on)."""


class VoteStore(Protocol):
    async def remember_answer(
        self, platform: str, chat_id: str, message_ids: Sequence[str], answer: AnswerRef
    ) -> None: ...
    async def answer_for(
        self, platform: str, chat_id: str, message_id: str
    ) -> AnswerRef | None: ...
    async def record(self, vote: VoteRecord) -> int: ...
    async def withdraw(self, platform: str, run_id: str, user_id: str) -> bool: ...


class FeedbackGate:
    """Stops every vote here; with no store (`SWITCHBOARD_FEEDBACK=off`) they are dropped."""

    def __init__(
        self, store: VoteStore | None, threads: ThreadStore, *, on_vote: OnVote | None = None
    ) -> None:
        self._store = store
        self._threads = threads
        self._on_vote = on_vote

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        vote = ctx.msg.vote
        if vote is None:
            return await call_next(ctx)
        if self._store is not None:
            # votes read together run concurrently: a later one must replace the earlier one,
            # not be replaced by it, so each waits for the chat's entries before it
            if ctx.turn_order is not None:
                await ctx.turn_order.wait_turn()
            await self._place(ctx, self._store, vote)
        return Outcome.ANSWERED

    async def _place(self, ctx: MessageContext, store: VoteStore, vote: Vote) -> None:
        msg, platform = ctx.msg, str(ctx.msg.platform)
        if vote.run_id:  # a button: anyone who sees the answer may rate it
            run_id, thread_id = vote.run_id, await self._threads.peek(ctx.conversation) or ""
        else:  # a reaction: only on an answer of ours, and only its asker's
            answer = await store.answer_for(platform, msg.chat_id, vote.message_id)
            if answer is None or answer.asker_id != msg.sender_id:
                _log.info("vote.ignored", reason="not_an_answer" if answer is None else "not_asker")
                return
            run_id, thread_id = answer.run_id, answer.thread_id
        if vote.value not in ("", *VoteValue):
            return
        if not vote.value:
            if await store.withdraw(platform, run_id, msg.sender_id):
                _log.info("vote.withdrawn", run_id=run_id)
            return
        record = _record(msg, vote, run_id, thread_id)
        if await store.record(record) == _SAME:
            return
        metrics.FEEDBACK.labels(platform=platform, value=str(record.value)).inc()
        _log.info("vote.recorded", run_id=run_id, value=str(record.value))
        if self._on_vote is not None:
            try:
                await self._on_vote(record)
            except Exception as exc:  # an export is a courtesy: the vote is stored
                _log.warning("vote.export_failed", error=type(exc).__name__)


def _record(msg: InboundMessage, vote: Vote, run_id: str, thread_id: str) -> VoteRecord:
    return VoteRecord(
        platform=str(msg.platform),
        user_id=msg.sender_id,
        run_id=run_id,
        value=VoteValue(vote.value),
        at=time.time(),
        thread_id=thread_id,
        chat_id=msg.chat_id,
        message_id=vote.message_id,
    )
