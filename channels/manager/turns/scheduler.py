"""Turns: the only owner of a thread's lock, queue, follow-ups and stop.

A message joins its thread's queue (`ThreadQueue.submit`); if the lock was free this worker holds
the thread (`ThreadHold`: one keeper for everything done under the lock) and answers the queue
batch by batch until it is empty. For each batch the answer is recorded in the reply ledger
before its first send, each piece the platform accepts is receipted, and the batch leaves the
queue with its last piece. A batch taken again (a crash, a lost lock, a Redis error) resends
from the ledger and never runs the model twice.

A message that arrives while its conversation's turn runs does what the conversation's busy mode
says (`BusyMode`): it is queued for the next batch (`queue`), refused (`reject`), handed to the
running agent before its next model call (`steer`, `channels/manager/turns/steering.py`; the batch
grows by it), or it cancels the running run, whose batch is then answered together with it
(`interrupt`). In `collect` mode the first message of a burst waits `collect_s` for the rest.

Every failure inside a hold ends in `_hold`'s one boundary: logged once with a reference id,
then the batch is either answered (an error line for a failure that would only repeat) or
handed back to the queue, watched, and tried again after a backoff. Each take of a batch counts
one attempt; past `max_attempts` the batch is answered with an error line instead of run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import structlog

from channels import metrics
from channels.adapter import AckKind, Adapter, Chunk
from channels.bindings import NO_BINDING, BindingResolver, Effective
from channels.manager.codec import CorruptPayload, decode_message
from channels.manager.config import ManagerConfig, ManagerStores, TurnRunner
from channels.manager.context import (
    MessageContext,
    Outcome,
    TurnSession,
    chat_route,
    turn_context,
)
from channels.manager.gates.askers import is_asker
from channels.manager.replies.questions import QuestionDesk
from channels.manager.replies.responder import Responder
from channels.manager.turns.batches import Batch, pick_batch, recorded_batch, stale_message
from channels.manager.turns.delivered import Delivered
from channels.manager.turns.delivery import ReplyDelivery
from channels.manager.turns.files import fetch_batch_files
from channels.manager.turns.history import ConversationHistory
from channels.manager.turns.hold import LockLost, ThreadHold
from channels.manager.turns.ledger import CorruptRecord, Piece, TurnRecord
from channels.manager.turns.retry import Step, run_idempotent
from channels.manager.turns.runs import AgentRuns, RunOutcome
from channels.manager.turns.steering import Background, Steering
from channels.message import InboundMessage, Platform, ReplyTarget
from channels.render import render_chunks
from switchboard.errors import AgentError, StorageError, is_transient
from switchboard.feedback import AnswerRef
from switchboard.state import (
    BusyMode,
    PendingQuestion,
    QueuedItem,
    Slot,
    SlotState,
    StopRequest,
    entry_arrival_ms,
    sortable_entry_id,
)

if TYPE_CHECKING:
    from channels.usage import UsageDesk

__all__ = ["TurnScheduler"]

_log = structlog.get_logger(__name__)

_FULL_TEXT = (
    "I already have {n} messages waiting here, so I can't take this one. "
    "Please send it again after my next reply."
)
_BUSY_TEXT = "I'm still working on the previous message here; please resend in a moment."
_MAX_BACKOFF_S = 600.0
_COLLECT_POLL_S = 0.05  # past the window's end: how often a late message of the burst is sought
_TOO_OLD_TEXT = (
    "This message came in too long ago for me to answer it now; "
    "please send it again if it still matters."
)
_NOT_THEIRS_TEXT = (
    "My question here is for the person I asked, so I didn't take this as its answer. "
    "Please send your message again once they have replied."
)


class TurnScheduler:
    def __init__(
        self,
        *,
        runtime: TurnRunner,
        stores: ManagerStores,
        questions: QuestionDesk,
        responder: Responder,
        config: ManagerConfig,
        background: Background,
        usage: UsageDesk | None = None,
        bindings: BindingResolver | None = None,
    ) -> None:
        self._usage = usage
        self._bindings = bindings
        self._background = background
        self._steers = bool(getattr(runtime, "steers", False))
        self._s = stores
        self._questions = questions
        self._say = responder
        self._config = config
        self._delivery = ReplyDelivery(
            questions=questions, responder=responder, votes=config.feedback
        )
        self._runs = AgentRuns(runtime=runtime, responder=responder, config=config)
        self._history = ConversationHistory.configured(stores.context, config)

    def stop_local(self, thread_id: str) -> bool:
        return self._runs.stop_local(thread_id)

    def mode_for(self, stored: BusyMode | None, default: BusyMode | None = None) -> BusyMode:
        """The busy mode a conversation gets: its own, its binding's (`default`) or the
        operator's, `steer` served as `queue` by an agent that cannot take messages mid-run."""
        mode = stored or default or self._config.busy
        return BusyMode.QUEUE if mode is BusyMode.STEER and not self._steers else mode

    @property
    def default_mode(self) -> BusyMode:
        return self._config.busy

    # -- entry points ----------------------------------------------------------------------

    async def submit(self, ctx: MessageContext) -> Outcome:
        """Hand a message to its thread: answer it now, or leave it queued for the holder."""
        assert ctx.thread_id is not None
        token = secrets.token_hex(16)
        bound = await self._bound(ctx.msg)
        default = bound.busy or self._config.busy
        if ctx.turn_order is not None:
            await ctx.turn_order.wait_turn()
        try:
            slot = await self._submit(ctx, token, default)
        finally:
            if ctx.turn_order is not None:
                ctx.turn_order.done.set()
        if slot is None:
            return Outcome.RETRY
        if slot.state is SlotState.DONE:
            _log.info("message.already_answered")
            return Outcome.DUPLICATE
        if slot.state is SlotState.FULL:
            _log.info("message.refused_queue_full", depth=slot.depth)
            await self._say.refuse(ctx.adapter, ctx.msg, _FULL_TEXT.format(n=slot.depth))
            return Outcome.ANSWERED
        if slot.state is SlotState.BUSY:
            _log.info("message.rejected_busy")
            await self._say.refuse(ctx.adapter, ctx.msg, _BUSY_TEXT)
            return Outcome.ANSWERED
        mode = self.mode_for(slot.mode, default)
        if slot.state is SlotState.QUEUED:
            metrics.QUEUE_DEPTH.labels(platform=str(ctx.msg.platform)).set(slot.depth)
            _log.info("message.queued", depth=slot.depth, mode=str(mode))
            if mode is BusyMode.INTERRUPT:  # the new batch, with the interrupted one, is the ack
                side = self._interrupt(ctx.thread_id)
            else:
                side = self._say.acknowledge(ctx.adapter, ctx.msg, AckKind.QUEUED)
            try:
                await asyncio.gather(self._s.orphans.watch(ctx.thread_id), side)
            except StorageError:
                raise  # retried: the submit is idempotent, the watch is done again
            except Exception as exc:  # the message is queued: its holder answers it, not an error
                self._say.failure_text(exc, "message.queued_aside_failed")
            return Outcome.QUEUED
        assert slot.lock is not None
        session = TurnSession(
            ctx.adapter, ctx.thread_id, slot.lock, own_entry=ctx.entry_id, mode=mode
        )
        collect = mode is BusyMode.COLLECT and slot.ledger is None and self._config.collect_s > 0
        handed_back = await self._hold(
            session, slot, collect=chat_route(ctx.msg) if collect else ""
        )
        if session.own_entry is None:
            return Outcome.HANDED_OVER
        return Outcome.QUEUED if handed_back else Outcome.RETRY

    async def _submit(self, ctx: MessageContext, token: str, busy: BusyMode) -> Slot | None:
        """`queue.submit`, which may have taken effect even when it raised: the message may
        then sit queued under a lock taken with `token` that nobody holds. The submit is
        idempotent per entry and token, so it is asked again with the same token (taking the
        lock it may already hold); if that fails too, the thread is watched and None says the
        entry stays pending, so a sweep answers the queue and a reclaim finds it answered.
        A StorageError is raised as before (the entry is retried the same way)."""
        assert ctx.thread_id is not None
        submit = functools.partial(
            self._s.queue.submit, ctx.thread_id, ctx.entry_id, ctx.payload, token, busy=busy
        )
        try:
            return await submit()
        except StorageError:
            raise
        except Exception as exc:
            self._say.failure_text(exc, "queue.submit_failed")  # logged, never said
        try:
            return await submit()
        except StorageError:
            raise
        except Exception as exc:
            self._say.failure_text(exc, "queue.submit_failed_again")
        await self._s.orphans.watch(ctx.thread_id, self._config.lock_ttl_s)
        return None

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
            if adapter is None:  # a process that serves this platform will take it
                _log.info("sweep.not_served_here")
                await self._s.locks.release(slot.lock)
                await self._s.orphans.watch(thread_id)
                return
            _log.info("thread.orphans_resumed", count=len(slot.items), attempt=slot.attempt)
            default = await self._bound_default(slot)
            session = TurnSession(
                adapter, thread_id, slot.lock, mode=self.mode_for(slot.mode, default)
            )
            if not await self._hold(session, slot):
                return  # not handed back cleanly: stay watched
        await self._s.orphans.forget(thread_id, seen)

    async def _bound(self, msg: InboundMessage) -> Effective:
        """The message's bindings (in memory; none without a bindings file)."""
        return NO_BINDING if self._bindings is None else await self._bindings.effective(msg)

    async def _bound_default(self, slot: Slot) -> BusyMode | None:
        """The busy mode a binding gives the conversation of a queue taken over by a sweep."""
        if self._bindings is None:
            return None
        for item in slot.items:
            with contextlib.suppress(CorruptPayload):
                return (await self._bound(decode_message(item.payload))).busy
        return None

    # -- holding the thread ----------------------------------------------------------------

    async def _interrupt(self, thread_id: str) -> None:
        """Cancel the thread's running run: here at once, in another worker at its next beat."""
        if not self._runs.stop_local(thread_id, interrupt=True):
            await self._s.locks.request_stop(thread_id, interrupt=True)

    async def _collect(self, session: TurnSession, route: str) -> Slot:
        """The rest of a burst, then the queue taken again (same token: no new attempt). The
        window is `collect_s` from the first message's arrival in the inbox (Redis's clock), not
        from when a loaded worker got to it; past its end it stays open, at most `collect_s`
        more, while a message of the chat that arrived within it is still on its way to the
        queue (unread, or in some worker's gates)."""
        own = session.own_entry
        assert own is not None
        window_ms = int(self._config.collect_s * 1000)
        until = entry_arrival_ms(own) + window_ms
        # this host's clock for the first wait (no round trip); Redis's decides when it ends
        await asyncio.sleep(min(self._config.collect_s, max(0.0, until / 1000 - time.time())))
        while True:
            now, waiting = await self._s.inbox.chat_waiting(own, route, until)
            if now >= until and not waiting:
                break
            if now >= until + window_ms:
                _log.info("collect.window_overran", since_arrival_ms=now - until + window_ms)
                break
            await asyncio.sleep((until - now) / 1000 if now < until else _COLLECT_POLL_S)
        slot = await self._s.queue.resume(session.thread_id, session.lock.token)
        if slot.state is not SlotState.RUN:
            raise LockLost
        return slot

    def _on_stop(self, session: TurnSession, request: StopRequest) -> None:
        self._runs.stop_local(session.thread_id, interrupt=request is StopRequest.INTERRUPT)

    async def _hold(self, session: TurnSession, slot: Slot, *, collect: str = "") -> bool:
        """Answer batches until the queue is empty, under one keeper. The one failure boundary
        of a turn: whatever fails is logged once and the batch is answered or handed back,
        never left under a held lock. True when the queue is done or safely handed back.
        `collect` names the chat (its inbox route) whose burst is collected first."""
        try:
            session.hold = ThreadHold(
                self._s.locks, session.lock, on_stop=lambda kind: self._on_stop(session, kind)
            )
            async with session.hold:
                if collect:
                    slot = await self._collect(session, collect)
                while slot.state is SlotState.RUN:
                    session.attempt = slot.attempt
                    slot = await self._batch(session, slot)
            if slot.state is SlotState.LOST:
                _log.warning("lock.lost_before_finish")
                return await self._hand_back(session, release=False, after_s=None)
            return True
        except LockLost:
            return await self._hand_back(session, release=False, after_s=None)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._hand_back(session, release=True, after_s=None))
            raise
        except Exception as exc:
            if session.answered is not None:  # the answer is out; only recording it failed
                if not is_transient(exc):
                    self._say.failure_text(exc, "turn.close_failed")  # logged, never said
                await self._receipt_last(session, session.answered)
                return await self._hand_back(
                    session, release=True, after_s=self._backoff_s(session.attempt)
                )
            if is_transient(exc):
                _log.warning("turn.retry_later", error=str(exc), attempt=session.attempt)
                return await self._hand_back(
                    session, release=True, after_s=self._backoff_s(session.attempt)
                )
            text = self._say.failure_text(exc, "turn.crashed")
            return await self._give_up(session, text)

    async def _receipt_last(self, session: TurnSession, answered: Delivered) -> None:
        """The last piece's receipt, normally `finish` itself: so the next attempt finds the
        whole answer sent and only closes the batch. Best effort."""
        try:
            await self._s.queue.receipt(session.thread_id, answered.unreceipted)
        except Exception as exc:
            _log.warning("ledger.last_receipt_failed", error=type(exc).__name__)

    def _backoff_s(self, attempt: int) -> float:
        """Wait before the next attempt: the lock TTL, doubling; the last one comes soon."""
        grace = self._config.lock_ttl_s
        if attempt >= self._config.max_attempts:
            return grace
        return min(_MAX_BACKOFF_S, grace * (1 << max(0, attempt - 1)))

    async def _hand_back(
        self, session: TurnSession, *, release: bool, after_s: float | None
    ) -> bool:
        """The queue is durable; make sure someone answers it: watch the thread (after the
        backoff), then free the lock. False if even that failed (the own entry, still
        pending, then brings the message back through a reclaim)."""
        try:
            await self._s.orphans.watch(session.thread_id, after_s)
            if release:
                await self._s.locks.release(session.lock)
        except StorageError as exc:
            _log.warning("turn.hand_back_failed", error=str(exc))
            return False
        return True

    async def _give_up(self, session: TurnSession, text: str) -> bool:
        """A failure that would only repeat: say so once (best effort), let the batch go, and
        leave whatever queued behind it to the sweeper."""
        batch = session.batch
        if batch is not None and batch.messages:
            try:
                if session.target is not None:
                    await self._say.notice(session.adapter, session.target, text)
                await self._finish(session, batch, TurnRecord(tuple(batch.entry_ids)), None)
            except Exception as exc:  # the boundary itself must not fail: hand back instead
                _log.warning("turn.give_up_failed", error=type(exc).__name__)
        return await self._hand_back(session, release=True, after_s=None)

    # -- one batch -------------------------------------------------------------------------

    async def _batch(self, session: TurnSession, slot: Slot) -> Slot:
        recorded = self._recorded(slot)
        if recorded is not None:
            record, batch = recorded
            session.batch = batch
            session.target = _refusal_target(batch.last) if record.refusal else _target(batch)
            assert slot.ledger is not None
            receipts = slot.ledger.receipts
            _log.info("turn.resumed_from_ledger", pieces=len(record.pieces), sent=len(receipts))
            if slot.attempt > self._config.max_attempts:  # sending keeps failing: stop trying
                unsent = len(record.pieces) > len(receipts)
                return await self._out_of_attempts(session, batch, record, say=unsent)
        else:
            stale = stale_message(
                slot.items, now=time.time(), max_age_s=self._config.queue_max_age_s
            )
            if stale is not None:
                return await self._too_old(session, *stale)
            strangers = _not_answers(slot.items, slot.question)
            if strangers:
                return await self._not_theirs(session, strangers)
            batch = pick_batch(slot.items, slot.question, max_chars=self._config.max_input_chars)
            session.batch = batch
            if batch.dropped:
                _log.warning("queue.dropped_entries", count=batch.dropped)
            if not batch.messages:
                return await self._finish(session, batch, TurnRecord(tuple(batch.entry_ids)), None)
            if len(slot.items) > len(batch.entry_ids) or len(batch.messages) > 1:
                _log.info("message.follow_up", count=len(batch.messages))
            session.target = _target(batch)
            if slot.attempt > self._config.max_attempts:  # said once, never recorded
                record = TurnRecord(tuple(batch.entry_ids))
                return await self._out_of_attempts(session, batch, record, say=True)
            answer = await self._answer(session, batch, slot)
            if answer is None:
                return await self._interrupted(session, batch)
            record = answer
            batch = session.batch  # grown by the messages steered into the run
            receipts = {}
            if record.pieces and not await self._s.queue.record(session.lock, record.encode()):
                raise LockLost
        return await self._deliver(session, batch, record, receipts)

    async def _deliver(
        self, session: TurnSession, batch: Batch, record: TurnRecord, receipts: dict[int, str]
    ) -> Slot:
        """A recorded answer into the chat, then the batch closed."""
        with session.quiet():  # the answer is recorded: a stop has nothing left to cancel
            delivered = await self._delivery.deliver(
                session, record, receipts, lambda sent: self._receipt(session, sent)
            )
        session.answered = delivered
        return await self._finish(session, batch, record, delivered)

    async def _too_old(
        self, session: TurnSession, entry_id: str, msg: InboundMessage, age_s: float
    ) -> Slot:
        """A message older than `queue_max_age_s` when its turn would start (the service was
        down, or the queue stood behind long turns): never run, it is told so in a reply, a
        batch of its own. The refusal goes through the reply ledger like any answer, so a
        batch taken again resends it at most once and the entry is finished as answered."""
        _log.info("message.too_old", age_s=round(age_s))
        batch = Batch([msg], [entry_id], "", False, 0)
        session.batch = batch
        session.target = _refusal_target(msg)
        record = TurnRecord((entry_id,), pieces=_said(session.adapter, _TOO_OLD_TEXT), refusal=True)
        if not await self._s.queue.record(session.lock, record.encode()):
            raise LockLost
        return await self._deliver(session, batch, record, {})

    async def _not_theirs(
        self, session: TurnSession, strangers: list[tuple[str, InboundMessage]]
    ) -> Slot:
        """Messages typed by someone other than the asker while a question is open: not its
        answer (a press by them is refused the same way). Each sender is told so (best effort:
        a courtesy) and the messages leave the queue unanswered; the question stays open."""
        for _entry, msg in strangers:
            _log.info("question.typed_answer_refused")
            try:
                await self._say.refuse(session.adapter, msg, _NOT_THEIRS_TEXT)
            except Exception as exc:
                _log.warning("question.refusal_failed", error=type(exc).__name__)
        messages = [msg for _entry, msg in strangers]
        batch = Batch(messages, [entry for entry, _msg in strangers], "", False, 0)
        session.batch = batch
        return await self._finish(session, batch, TurnRecord(tuple(batch.entry_ids)), None)

    async def _out_of_attempts(
        self, session: TurnSession, batch: Batch, record: TurnRecord, *, say: bool
    ) -> Slot:
        """A batch taken more than `max_attempts` times: one error line (unless its whole answer
        is already out), then it leaves the queue."""
        if say and session.target is not None:
            error = AgentError(f"gave up after {session.attempt - 1} attempts")
            text = self._say.failure_text(error, "turn.gave_up")
            await self._say.notice(session.adapter, session.target, text)
        return await self._finish(session, batch, record, None)

    async def _interrupted(self, session: TurnSession, batch: Batch) -> Slot:
        """A new message cancelled the run. If the run's user message is in the thread's history
        (the agent wrote it on the way out), the batch is answered by the interruption and the
        next turn carries only what came after; otherwise the batch is taken again together
        with what interrupted it, so nothing is lost either way."""
        if not batch.resume and await self._runs.input_kept(session.thread_id, batch.text):
            return await self._finish(session, batch, TurnRecord(tuple(batch.entry_ids)), None)
        slot = await self._s.queue.resume(session.thread_id, session.lock.token)
        if slot.state is not SlotState.RUN:
            raise LockLost
        session.batch = None
        return slot

    def _recorded(self, slot: Slot) -> tuple[TurnRecord, Batch] | None:
        """The batch an earlier attempt recorded an answer for, if it is still the queue's."""
        if slot.ledger is None:
            return None
        try:
            record = TurnRecord.decode(slot.ledger.record)
        except CorruptRecord as exc:
            _log.warning("ledger.corrupt", error=str(exc))
            return None
        batch = recorded_batch(slot.items, record.entries)
        return None if batch is None else (record, batch)

    async def _receipt(self, session: TurnSession, sent: dict[int, str]) -> None:
        with session.protected():  # a sent piece stays sent, whoever holds the lock now
            await run_idempotent(
                [lambda: self._s.queue.receipt(session.thread_id, sent)],
                self._config.retry_delays_s,
                at_least_s=session.lock.ttl_s,
            )
        if session.lost:
            raise LockLost

    async def _answer(self, session: TurnSession, batch: Batch, slot: Slot) -> TurnRecord | None:
        """Run the turn for a batch: its answer as pieces to send; None when a new message
        interrupted the run."""
        last = batch.last
        target = session.target
        assert target is not None
        question = slot.question if batch.resume else None
        answered = question.question_id if question is not None else ""
        entries = tuple(batch.entry_ids)
        if question is not None:
            await self._questions.show_answer(session.adapter, target, question, batch.text)
        session.context = turn_context(last, fence=session.lock.token)
        if self._bindings is not None:  # the agent and streaming this conversation is bound to
            bound = await self._bound(last)
            session.context = replace(session.context, agent=bound.agent)
            session.streaming = _streaming(bound)
        structlog.contextvars.bind_contextvars(thread_id=session.thread_id)
        files, notices = await fetch_batch_files(
            session.adapter, batch.messages, self._config.max_attachment_bytes
        )
        for notice in notices:
            await self._say.notice(session.adapter, target, notice)
        if files:
            session.context = replace(session.context, files=tuple(files))
        elif not batch.text.strip():
            return TurnRecord(entries, answered_question=answered)  # the notices answer it
        earlier = await self._history.gather(
            session.adapter, session.thread_id, batch, resume=batch.resume
        )
        if earlier:
            session.context = replace(session.context, context_messages=earlier)
        steering = None
        if session.mode is BusyMode.STEER and not batch.resume:
            steering = Steering(
                queue=self._s.queue,
                lock=session.lock,
                batch=batch,
                adapter=session.adapter,
                responder=self._say,
                max_chars=self._config.max_input_chars,
                background=self._background,
            )
            session.context = replace(session.context, steer=steering.take)
        started = time.perf_counter()
        outcome = await self._runs.run(session, batch)
        metrics.TURN_LATENCY.labels(platform=str(last.platform)).observe(
            time.perf_counter() - started
        )
        if outcome.interrupted:
            return None
        if steering is not None:
            session.batch = steering.grown(batch)
            entries = tuple(session.batch.entry_ids)
        return self._record(session, entries, answered, outcome)

    def _record(
        self, session: TurnSession, entries: tuple[str, ...], answered: str, outcome: RunOutcome
    ) -> TurnRecord:
        adapter, result = session.adapter, outcome.result
        pieces: tuple[Piece, ...]
        if result is None:
            pieces = _said(adapter, outcome.said) if outcome.said else ()
            return TurnRecord(entries, pieces=pieces, answered_question=answered)
        structlog.contextvars.bind_contextvars(run_id=result.run_id)
        assert session.batch is not None
        if result.question is not None:
            pending, chunks = self._questions.prepare(
                adapter, session.batch.last.sender_id, result.question
            )
            pieces = (Piece("question", question=pending, chunks=chunks),)
        else:
            reply = self._say.reply_chunks(adapter, result.reply_text)
            pieces = tuple(Piece("chunk", chunk=c) for c in reply)
        pieces += tuple(Piece("file", file=f) for f in result.files)
        return TurnRecord(entries, result.run_id, pieces, answered, result.usage)

    async def _finish(
        self, session: TurnSession, batch: Batch, record: TurnRecord, delivered: Delivered | None
    ) -> Slot:
        """Record the batch answered (with the reply's ids where a reply to them continues the
        thread) and take the next batch. Idempotent, so it is retried through a Redis outage
        for at least the lock TTL, with the keeper still running."""
        lock, thread_id = session.lock, session.thread_id
        work: list[Step] = [
            lambda: self._s.queue.finish(lock, batch.entry_ids, record.answered_question)
        ]
        if (
            delivered is not None
            and delivered.message_ids
            and batch.messages
            and not batch.last.is_dm
        ):
            platform, chat, ids = (
                str(session.adapter.platform),
                delivered.chat_id,
                delivered.message_ids,
            )
            work.append(lambda: self._s.threads.remember_messages(platform, chat, ids, thread_id))
        votes = self._s.feedback
        if (
            votes is not None
            and self._config.feedback
            and session.adapter.capabilities.votes == "reactions"
            and delivered is not None
            and delivered.message_ids
            and record.run_id
            and batch.messages
        ):  # a reaction on the answer is its asker's vote: remember whose answer it is
            answer = AnswerRef(thread_id, record.run_id, batch.last.sender_id)
            remember = functools.partial(
                votes.remember_answer,
                str(session.adapter.platform),
                delivered.chat_id,
                tuple(delivered.message_ids),
                answer,
            )
            work.append(remember)
        own = session.own_entry
        finishes_own = own is not None and sortable_entry_id(own) in batch.entry_ids
        charge = record.charge()
        if charge is not None and self._usage is not None and batch.messages:
            usage, payer = self._usage, batch.last
            work.append(lambda: usage.record(payer, charge))  # idempotent per run id
        delays = self._config.retry_delays_s
        with session.protected():  # recorded answered even if the lock was lost meanwhile
            results = await run_idempotent(work, delays, at_least_s=lock.ttl_s)
            if own is not None and finishes_own:
                # only after its batch: the pending entry is what brings it back
                await run_idempotent([lambda: self._s.inbox.finish([own])], delays)
        if finishes_own:
            session.own_entry = None
        session.batch = None
        session.answered = None
        taken: Slot = results[0]  # the queue's `finish` is the first step
        return taken


def _not_answers(
    items: Sequence[QueuedItem], question: PendingQuestion | None
) -> list[tuple[str, InboundMessage]]:
    """The queued messages someone other than the asker typed while `question` is open."""
    if question is None:
        return []
    out: list[tuple[str, InboundMessage]] = []
    for item in items:
        with contextlib.suppress(CorruptPayload):  # the batch drops those
            msg = decode_message(item.payload)
            if msg.button is None and not is_asker(msg, question.asker_id):
                out.append((item.entry_id, msg))
    return out


def _streaming(bound: Effective) -> bool | None:
    value = bound.get("streaming")
    return None if value is None else value == "on"


def _said(adapter: Adapter, text: str) -> tuple[Piece, ...]:
    chunks: Sequence[Chunk] = render_chunks(text, adapter.capabilities) or [Chunk(text, text)]
    return tuple(Piece("chunk", chunk=c) for c in chunks)


def _target(batch: Batch) -> ReplyTarget:
    """Where a batch's answer goes: the thread of its last message, replying to it when
    several messages were joined in a group (so it is clear which burst it answers)."""
    last = batch.last
    target = last.target
    if not last.is_dm and len(batch.messages) > 1:
        target = replace(target, reply_to_id=last.provider_message_id or target.reply_to_id)
    return target


def _refusal_target(msg: InboundMessage) -> ReplyTarget:
    """A refusal replies to the message it refuses, in a DM too (`Responder.refuse`)."""
    return replace(msg.target, reply_to_id=msg.provider_message_id or None)


def _adapter_for(slot: Slot, adapters: dict[Platform, Adapter]) -> Adapter | None:
    for item in slot.items:
        with contextlib.suppress(CorruptPayload):
            return adapters.get(decode_message(item.payload).platform)
    return None
