"""Turns: the only owner of a thread's lock, queue, follow-ups and stop.

A message joins its thread's queue (`ThreadQueue.submit`); if the lock was free this worker holds
it and answers the queue batch by batch until it is empty, each batch removed only after its reply
was sent. A busy thread keeps the message for its holder, and the sender sees ⏳. Whatever fails
mid-turn, the batch stays queued and the thread is watched (`Orphans`), so another worker answers
it; a turn whose lock is lost is cancelled and its checkpoint write is fenced off.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import structlog

from channels import metrics
from channels.adapter import AckKind, Adapter
from channels.manager.batches import Batch, pick_batch
from channels.manager.codec import CorruptPayload, decode_message
from channels.manager.config import ManagerConfig, ManagerStores, TurnRunner
from channels.manager.context import MessageContext, Outcome, TurnSession, turn_context
from channels.manager.delivery import ReplyDelivery
from channels.manager.files import fetch_batch_files
from channels.manager.questions import QuestionDesk
from channels.manager.replies import Responder
from channels.manager.retry import Step, run_idempotent
from channels.manager.runs import AgentRuns, LockLost
from channels.message import Platform
from storage import Slot, SlotState
from storage.thread_queue import sortable_entry_id
from switchboard.errors import StorageError

if TYPE_CHECKING:
    from channels.usage import UsageDesk

__all__ = ["TurnScheduler"]

_log = structlog.get_logger(__name__)

_FULL_TEXT = (
    "I already have {n} messages waiting here, so I can't take this one. "
    "Please send it again after my next reply."
)
_BUSY_TEXT = "I'm still working on the previous message here; please resend in a moment."


class TurnScheduler:
    def __init__(
        self,
        *,
        runtime: TurnRunner,
        stores: ManagerStores,
        questions: QuestionDesk,
        responder: Responder,
        config: ManagerConfig,
        usage: UsageDesk | None = None,
    ) -> None:
        self._usage = usage
        self._runtime = runtime
        self._s = stores
        self._questions = questions
        self._say = responder
        self._config = config
        self._delivery = ReplyDelivery(questions=questions, responder=responder)
        self._runs = AgentRuns(
            runtime=runtime, locks=stores.locks, responder=responder, config=config
        )

    def stop_local(self, thread_id: str) -> bool:
        return self._runs.stop_local(thread_id)

    # -- entry points ----------------------------------------------------------------------

    async def submit(self, ctx: MessageContext) -> Outcome:
        """Hand a message to its thread: answer it now, or leave it queued for the holder."""
        assert ctx.thread_id is not None
        token = secrets.token_hex(16)
        if ctx.turn_order is not None:
            await ctx.turn_order.wait_turn()
        try:
            slot = await self._s.queue.submit(
                ctx.thread_id,
                ctx.entry_id,
                ctx.payload,
                token,
                queue_if_busy=self._config.busy == "queue",
            )
        finally:
            if ctx.turn_order is not None:
                ctx.turn_order.done.set()
        if slot.state is SlotState.DONE:
            _log.info("message.already_answered")
            return Outcome.DUPLICATE
        if slot.state is SlotState.FULL:
            _log.info("message.refused_queue_full", depth=slot.depth)
            await ctx.adapter.notify(ctx.msg, _FULL_TEXT.format(n=slot.depth))
            return Outcome.ANSWERED
        if slot.state is SlotState.BUSY:
            _log.info("message.rejected_busy")
            await ctx.adapter.notify(ctx.msg, _BUSY_TEXT)
            return Outcome.ANSWERED
        if slot.state is SlotState.QUEUED:
            metrics.QUEUE_DEPTH.labels(platform=str(ctx.msg.platform)).set(slot.depth)
            _log.info("message.queued", depth=slot.depth)
            await asyncio.gather(
                self._s.orphans.watch(ctx.thread_id),
                self._say.acknowledge(ctx.adapter, ctx.msg, AckKind.QUEUED),
            )
            await self._s.inbox.finish([ctx.entry_id])
            return Outcome.HANDED_OVER
        assert slot.lock is not None
        session = TurnSession(ctx.adapter, ctx.thread_id, slot.lock, own_entry=ctx.entry_id)
        await self._hold(session, slot)
        return Outcome.HANDED_OVER if session.own_entry is None else Outcome.RETRY

    async def sweep(self, thread_id: str, seen: float, adapters: dict[Platform, Adapter]) -> None:
        """Answer a queue whose holder went away (crash, lost lock, failed last step)."""
        structlog.contextvars.bind_contextvars(thread_id=thread_id)
        slot = await self._s.queue.resume(thread_id, secrets.token_hex(16))
        if slot.state is SlotState.BUSY:
            await self._s.orphans.watch(thread_id)
            return
        if slot.state is SlotState.RUN:
            adapter = _adapter_for(slot, adapters)
            assert slot.lock is not None
            if adapter is None:
                _log.error("sweep.no_adapter")
                await self._s.locks.release(slot.lock)
                return
            _log.info("thread.orphans_resumed", count=len(slot.items))
            await self._hold(TurnSession(adapter, thread_id, slot.lock), slot)
        await self._s.orphans.forget(thread_id, seen)

    # -- holding the lock ------------------------------------------------------------------

    async def _hold(self, session: TurnSession, slot: Slot) -> None:
        """Answer batches until the queue is empty; on any failure leave the queue to the
        sweeper (watched) and never keep the lock past this call."""
        try:
            while slot.state is SlotState.RUN:
                slot = await self._batch(session, slot)
        except LockLost:
            _log.warning("lock.lost")
            await self._hand_back(session, release=False)
        except StorageError as exc:
            _log.warning("turn.storage_failed", error=str(exc))
            await self._hand_back(session, release=True)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._hand_back(session, release=True))
            raise
        if slot.state is SlotState.LOST:
            _log.warning("lock.lost_before_finish")
            await self._hand_back(session, release=False)

    async def _hand_back(self, session: TurnSession, *, release: bool) -> None:
        """The queue is durable; make sure someone answers it: watch the thread, then let the
        inbox entry go (its message is in the queue)."""
        try:
            await self._s.orphans.watch(session.thread_id)
            if release:
                await self._s.locks.release(session.lock)
            if session.own_entry is not None:
                await self._s.inbox.finish([session.own_entry])
                session.own_entry = None
        except StorageError as exc:  # the entry stays pending: a reclaim resubmits it
            _log.warning("turn.hand_back_failed", error=str(exc))

    async def _batch(self, session: TurnSession, slot: Slot) -> Slot:
        batch = pick_batch(slot.items, slot.question, max_chars=self._config.max_input_chars)
        if batch.dropped:
            _log.warning("queue.dropped_entries", count=batch.dropped)
        question_id = ""
        if batch.messages:
            if len(slot.items) > len(batch.entry_ids) or len(batch.messages) > 1:
                _log.info("message.follow_up", count=len(batch.messages))
            question_id = await self._answer(session, batch, slot)
        return await self._finish(session, batch, question_id)

    async def _answer(self, session: TurnSession, batch: Batch, slot: Slot) -> str:
        """Run the turn for a batch and send its reply; the id of the question it answered."""
        last = batch.last
        target = last.target
        if not last.is_dm and len(batch.messages) > 1:
            target = replace(target, reply_to_id=last.provider_message_id or target.reply_to_id)
        question = slot.question if batch.resume else None
        if question is not None:
            await self._questions.show_answer(session.adapter, target, question, batch.text)
        session.target = target
        session.context = turn_context(last, fence=session.lock.token)
        structlog.contextvars.bind_contextvars(thread_id=session.thread_id)
        files, notices = await fetch_batch_files(
            session.adapter, batch.messages, self._config.max_attachment_bytes
        )
        for notice in notices:
            await self._say.send_text(session.adapter, target, notice)
        if files:
            session.context = replace(session.context, files=tuple(files))
        elif not batch.text.strip():
            return ""  # every file was refused and there is no text: the notices answer it
        started = time.perf_counter()
        result = await self._runs.run(session, batch)
        if result is not None:
            structlog.contextvars.bind_contextvars(run_id=result.run_id)
            session.charge = (last, result)
            try:
                await self._delivery.deliver(session, result, last.sender_id)
            except StorageError:
                raise
            except Exception as exc:  # the platform refused the reply: say so, once
                await self._say.report(session.adapter, target, exc)
            metrics.TURN_LATENCY.labels(platform=str(last.platform)).observe(
                time.perf_counter() - started
            )
        return question.question_id if question is not None else ""

    async def _finish(self, session: TurnSession, batch: Batch, question_id: str) -> Slot:
        """Record the batch answered (with the reply's ids, so replies to them find the thread)
        and take the next batch; idempotent, so a storage blip is retried."""
        lock, thread_id = session.lock, session.thread_id
        work: list[Step] = [lambda: self._s.queue.finish(lock, batch.entry_ids, question_id)]
        sent_ids, session.sent_ids = session.sent_ids, []
        if sent_ids:
            platform, chat = str(session.adapter.platform), session.sent_chat
            work.append(
                lambda: self._s.threads.remember_messages(platform, chat, sent_ids, thread_id)
            )
        own = session.own_entry
        if own is not None and sortable_entry_id(own) in batch.entry_ids:
            work.append(lambda: self._s.inbox.finish([own]))
        charge, session.charge = session.charge, None
        if charge is not None and self._usage is not None:
            usage, (payer, result) = self._usage, charge
            work.append(lambda: usage.record(payer, result))  # idempotent per run id
        results = await run_idempotent(work, self._config.retry_delays_s)
        if own is not None and sortable_entry_id(own) in batch.entry_ids:
            session.own_entry = None
        return results[0]


def _adapter_for(slot: Slot, adapters: dict[Platform, Adapter]) -> Adapter | None:
    for item in slot.items:
        with contextlib.suppress(CorruptPayload):
            return adapters.get(decode_message(item.payload).platform)
    return None
