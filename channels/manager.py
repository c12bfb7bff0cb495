"""The channel manager: one pipeline from an adapter's `InboundMessage` to a rendered reply.

Steps, in order, each returning early with a logged reason:
dedupe → link commands → access → rate limit → commands → thread → button/answer → lock
(busy: queue + acknowledge) → agent turn → render → send → remember reply ids → follow-up turn for
whatever queued meanwhile.

Adapters call `deliver`, which schedules `handle` as a tracked task and returns at once, so no
platform's ack deadline waits on the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

import structlog

from agent.result import Question, TurnContext, TurnResult
from channels import metrics
from channels.adapter import AckKind, Adapter, Chunk, QuestionPrompt, SentRef
from channels.commands import HELP_TEXT, Command, CommandName, parse_command
from channels.message import InboundMessage, Platform, ReplyTarget, conversation_key
from channels.render import render_chunks
from storage import (
    Dedupe,
    Lock,
    PendingMessage,
    PendingQuestion,
    PendingQuestions,
    PendingQueue,
    RateDecision,
    RateLimiter,
    ThreadLocks,
    ThreadMap,
    TurnGate,
)
from switchboard.errors import AgentError, SwitchboardError

if TYPE_CHECKING:
    from channels.access import AccessGate

__all__ = ["Manager", "ManagerConfig", "ManagerStores", "TurnRunner"]

_log = structlog.get_logger(__name__)


_USER_MESSAGES = {
    "agent": "The AI model couldn't answer just now.",
    "storage": "I couldn't reach my storage just now.",
    "rate_limited": "The chat platform is rate-limiting me.",
    "platform": "The chat platform rejected my reply.",
    "auth": "I'm not authorised on this platform.",
    "access": "This conversation isn't allowed to use me.",
    "config": "I'm misconfigured.",
    "internal": "Something went wrong on my side.",
}
FALLBACK_REPLY = "I don't have anything to add to that. Could you rephrase?"
_NUMBER = re.compile(r"^\s*(\d{1,2})[.)]?\s*$")


class TurnRunner(Protocol):
    """What the manager needs from the agent runtime."""

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult: ...

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult: ...


@dataclass(frozen=True, slots=True)
class ManagerStores:
    dedupe: Dedupe
    threads: ThreadMap
    locks: ThreadLocks
    pending: PendingQueue
    questions: PendingQuestions
    rate: RateLimiter
    turns: TurnGate


@dataclass(frozen=True, slots=True)
class ManagerConfig:
    busy: Literal["queue", "reject"] = "queue"
    model_name: str = "demo"
    turn_timeout_s: float = 600.0
    max_input_chars: int = 32_000  # a pasted log or book would cost more than it could help
    typing_delay_s: float = 0.3  # below this an answer arrives before a typing hint would


@dataclass(slots=True)
class _Work:
    """One turn's input: fresh text, or the answer to the thread's open question."""

    text: str
    resume: bool = False


class Manager:
    def __init__(
        self,
        *,
        runtime: TurnRunner,
        stores: ManagerStores,
        access: AccessGate | None = None,
        config: ManagerConfig | None = None,
    ) -> None:
        self._runtime = runtime
        self._s = stores
        self._access = access
        self._config = config or ManagerConfig()
        self._adapters: dict[Platform, Adapter] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._running: dict[str, asyncio.Task[TurnResult]] = {}

    # -- wiring ---------------------------------------------------------------------------

    def register(self, adapter: Adapter) -> None:
        self._adapters[adapter.platform] = adapter

    async def deliver(self, msg: InboundMessage) -> None:
        task = asyncio.create_task(self.handle(msg), name=f"message:{msg.platform}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self, timeout: float = 30.0) -> None:
        """Wait until every scheduled message has been handled (tests, graceful shutdown)."""
        deadline = time.monotonic() + timeout
        while self._tasks:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{len(self._tasks)} message task(s) still running")
            await asyncio.wait(set(self._tasks), timeout=remaining)

    async def aclose(self, timeout: float = 10.0) -> None:
        with contextlib.suppress(TimeoutError):
            await self.idle(timeout)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- pipeline ---------------------------------------------------------------------------

    async def handle(self, msg: InboundMessage) -> None:
        """Run the whole pipeline for one message; never raises."""
        structlog.contextvars.bind_contextvars(
            platform=str(msg.platform), chat_id=msg.chat_id, event_id=msg.provider_message_id
        )
        adapter = self._adapters.get(msg.platform)
        if adapter is None:
            _log.error("message.no_adapter")
            return
        metrics.MESSAGES_IN.labels(platform=str(msg.platform)).inc()
        try:
            if not await self._s.dedupe.claim_all(
                str(msg.platform), list(msg.dedupe_ids), scope=msg.chat_id
            ):
                metrics.DEDUPE_HITS.labels(platform=str(msg.platform)).inc()
                _log.info("message.deduped")
                return
            await self._dispatch(adapter, msg)
        except Exception as exc:
            await self._report(adapter, msg.target, exc)

    async def _dispatch(self, adapter: Adapter, msg: InboundMessage) -> None:
        command = None if msg.button else parse_command(msg.text)
        if command and command.name in (CommandName.LINK, CommandName.UNLINK, CommandName.HELP):
            await self._link_or_help(adapter, msg, command)
            return
        limited = msg.platform is not Platform.CONSOLE and msg.button is None
        # Access and flood checks are independent reads: one round trip of wall time for both.
        allowed, decision = await asyncio.gather(
            self._allowed(adapter, msg),
            self._s.rate.hit(str(msg.platform), msg.sender_id) if limited else _allow(),
        )
        if not allowed:
            return
        if decision is not RateDecision.ALLOW:
            _log.info("message.rate_limited", decision=str(decision))
            if decision is RateDecision.NOTIFY:
                await adapter.notify(
                    msg, "You're sending messages too fast; I'll skip some. Try again in a minute."
                )
            return
        conv = conversation_key(msg)
        if command is not None:
            await self._command(adapter, msg, command, conv)
            return
        if msg.button is None and not msg.text.strip():
            await self._send_text(adapter, msg.target, "I can only read text for now.")
            return
        if len(msg.text) > self._config.max_input_chars:
            _log.info("message.too_long", chars=len(msg.text))
            await self._send_text(
                adapter,
                msg.target,
                f"That message is too long for me ({len(msg.text):,} characters; the limit is "
                f"{self._config.max_input_chars:,}). Please shorten it or send it in parts.",
            )
            return
        addressed = msg.is_dm or msg.mentions_bot or msg.reply_to_bot or msg.button is not None
        thread_id = await self._thread_for(
            msg, conv, create=addressed or msg.platform is Platform.DISCORD
        )
        if thread_id is None:
            _log.info("message.ignored", reason="not_addressed")
            return
        structlog.contextvars.bind_contextvars(thread_id=thread_id)
        if msg.button is not None:
            answer = await self._press(adapter, msg, thread_id)
            if answer is None:
                return
            work = _Work(answer, resume=True)
        else:
            work = _Work(msg.text)
            self._background(self._ack(adapter, msg, AckKind.RECEIVED))
        await self._run_locked(adapter, msg, thread_id, work)

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        """Side work (receipt reactions, reply-id records) that must not delay the turn; tracked
        like messages, and a failure is logged, never lost."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            _log.warning("background.failed", error=type(exc).__name__)

    async def _ack(self, adapter: Adapter, msg: InboundMessage, kind: AckKind) -> None:
        try:
            await adapter.acknowledge(msg, kind)
        except SwitchboardError as exc:
            _log.warning("ack.failed", category=exc.category, kind=str(kind))

    async def _allowed(self, adapter: Adapter, msg: InboundMessage) -> bool:
        if self._access is None:
            return True
        decision = await self._access.check(msg)
        if decision.allowed:
            return True
        _log.info("message.denied", notice=decision.notice is not None)
        if decision.notice:
            await adapter.notify(msg, decision.notice)
        return False

    async def _thread_for(self, msg: InboundMessage, conv: str, *, create: bool) -> str | None:
        """The message's thread: a reply to a bot message names its chain's thread; otherwise
        the conversation's, created only when `create`."""
        threads = self._s.threads
        if msg.reply_to_id and not msg.is_dm:
            found = await threads.thread_for_message(
                str(msg.platform), msg.chat_id, msg.reply_to_id
            )
            if found is not None:
                return found
        return await (threads.resolve(conv) if create else threads.peek(conv))

    # -- commands ---------------------------------------------------------------------------

    async def _link_or_help(self, adapter: Adapter, msg: InboundMessage, command: Command) -> None:
        if command.name is CommandName.HELP:
            await self._send_text(adapter, msg.target, HELP_TEXT)
            return
        if self._access is None:
            await adapter.notify(msg, "Linking is not enabled on this Switchboard.", private=True)
            return
        if command.name is CommandName.LINK:
            is_admin = msg.is_dm or await adapter.is_workspace_admin(msg)
            text = await self._access.link(msg, is_admin=is_admin)
        else:
            text = await self._access.unlink(msg)
        await adapter.notify(msg, text, private=True)

    async def _command(
        self, adapter: Adapter, msg: InboundMessage, command: Command, conv: str
    ) -> None:
        _log.info("command.received", command=str(command.name))
        threads, locks = self._s.threads, self._s.locks
        if command.name is CommandName.NEW:
            thread_id = await threads.start_new(conv)
            text = "Started a new conversation. Earlier messages here are forgotten."
            _log.info("thread.reset", thread_id=thread_id)
        elif command.name is CommandName.STOP:
            thread_id = await self._thread_for(msg, conv, create=False)
            stopped = False
            if thread_id is not None:
                stopped = await locks.request_stop(thread_id)
                local = self._running.get(thread_id)
                if local is not None and not local.done():
                    local.cancel()
                    stopped = True
            text = "Stopping the current answer." if stopped else "Nothing is running here."
        elif command.name is CommandName.STATUS:
            text = await self._status_text(await self._thread_for(msg, conv, create=False))
        else:
            text = f"Unknown command {command.raw.split()[0]!r}.\n\n{HELP_TEXT}"
        await self._send_text(adapter, msg.target, text)

    async def _status_text(self, thread_id: str | None) -> str:
        if thread_id is None:
            return f"No conversation yet here.\nModel: {self._config.model_name}"
        busy = await self._s.locks.is_locked(thread_id)
        queued = await self._s.pending.length(thread_id)
        question = await self._s.questions.get(thread_id)
        lines = [
            f"Thread: {thread_id[:8]}",
            f"Busy: {'yes' if busy else 'no'}",
            f"Queued messages: {queued}",
            f"Waiting for an answer: {'yes' if question else 'no'}",
            f"Model: {self._config.model_name}",
        ]
        return "\n".join(lines)

    # -- clarification answers --------------------------------------------------------------

    async def _press(self, adapter: Adapter, msg: InboundMessage, thread_id: str) -> str | None:
        """A button press: the asker's answer text, or None when the press is refused."""
        press = msg.button
        assert press is not None
        questions = self._s.questions
        open_q = await questions.get(thread_id)
        if open_q is None or open_q.question_id != press.question_id:
            await adapter.answer_button(msg, "This question is no longer open.")
            return None
        if open_q.asker_id != msg.sender_id:
            _log.info("question.press_refused")
            await adapter.answer_button(msg, "Only the person who asked can answer this question.")
            return None
        if not 0 <= press.option_index < len(open_q.options):
            await adapter.answer_button(msg, "That option doesn't exist.")
            return None
        taken = await questions.consume(thread_id, press.question_id)
        if taken is None:
            await adapter.answer_button(msg, "This question was already answered.")
            return None
        await adapter.answer_button(msg, None)
        answer = taken.options[press.option_index]
        await self._show_answer(adapter, msg.target, taken, answer)
        return answer

    async def _show_answer(
        self, adapter: Adapter, target: ReplyTarget, question: PendingQuestion, answer: str
    ) -> None:
        if not (adapter.capabilities.can_edit and question.message_id):
            return
        chunks = render_chunks(f"{question.text}\n\n✅ {answer}", adapter.capabilities)
        if not chunks:
            return
        try:
            await adapter.edit(target, question.message_id, chunks[-1])
        except SwitchboardError as exc:
            _log.warning("question.edit_failed", category=exc.category)

    @staticmethod
    def _answer_or_text(text: str, taken: PendingQuestion | None) -> _Work:
        """A typed message while a question is open answers it; a number picks an option."""
        if taken is None:
            return _Work(text)
        match = _NUMBER.match(text)
        if match and taken.options and 1 <= int(match.group(1)) <= len(taken.options):
            text = taken.options[int(match.group(1)) - 1]
        return _Work(text, resume=True)

    # -- the locked turn ----------------------------------------------------------------------

    async def _run_locked(
        self, adapter: Adapter, msg: InboundMessage, thread_id: str, work: _Work
    ) -> None:
        start = await self._s.turns.begin(thread_id, take_question=not work.resume)
        if start is None:
            await self._busy(adapter, msg, thread_id, work)
            return
        lock, carry = start.lock, start.queued
        if not work.resume:
            text = work.text
            if carry:  # a holder died with these queued; they are older, so they go first
                _log.info("message.picked_up_orphans", count=len(carry))
                mine = PendingMessage(msg.sender_id, msg.sender_name, text, msg.provider_message_id)
                text = _join_queued([*carry, mine], shared=not msg.is_dm)
                carry = []
            work = self._answer_or_text(text, start.question)
            if start.question is not None:
                await self._show_answer(adapter, msg.target, start.question, work.text)
        if not await self._hold(adapter, msg, thread_id, lock, work, carry):
            await self._pick_up_leftovers(adapter, msg, thread_id)

    async def _hold(
        self,
        adapter: Adapter,
        msg: InboundMessage,
        thread_id: str,
        lock: Lock,
        work: _Work | None,
        carry: list[PendingMessage],
    ) -> bool:
        """Run turns under `lock` and always let go of it; True when the queue was empty at the
        end (released by `TurnGate.end`), False when it had to be released after a failure."""
        released = False
        try:
            released = await self._turns(adapter, msg, thread_id, lock, work, carry)
        finally:
            if not released:
                with contextlib.suppress(SwitchboardError):
                    await self._s.locks.release(lock)
        return released

    async def _turns(
        self,
        adapter: Adapter,
        msg: InboundMessage,
        thread_id: str,
        lock: Lock,
        work: _Work | None,
        carry: list[PendingMessage],
    ) -> bool:
        """The turn for `work` (if any), then one follow-up turn per batch of queued messages,
        starting with `carry`. True once the lock was released with an empty queue."""
        context = _context(msg)
        target = msg.target
        queued = list(carry)
        while True:
            if work is not None:
                await self._one_turn(adapter, msg, target, thread_id, lock, work, context)
            if not queued:
                queued, released = await self._s.turns.end(lock)
                if released:
                    return True
                if not queued:  # only corrupt entries were queued; the caller releases the lock
                    return False
            _log.info("message.follow_up", count=len(queued))
            taken = await self._s.questions.consume(thread_id)
            work = self._answer_or_text(_join_queued(queued, shared=not msg.is_dm), taken)
            if taken is not None and len(queued) == 1:
                await self._show_answer(adapter, target, taken, work.text)
            last = queued[-1]
            target = replace(target, reply_to_id=last.message_id or target.reply_to_id)
            context = replace(context, user_id=last.sender_id, user_name=last.sender_name)
            msg = replace(msg, sender_id=last.sender_id, sender_name=last.sender_name)
            queued = []

    async def _one_turn(
        self,
        adapter: Adapter,
        msg: InboundMessage,
        target: ReplyTarget,
        thread_id: str,
        lock: Lock,
        work: _Work,
        context: TurnContext,
    ) -> None:
        started = time.perf_counter()
        runner = self._runtime.resume if work.resume else self._runtime.run_turn
        turn = asyncio.create_task(runner(thread_id, work.text, context), name=f"turn:{thread_id}")
        self._running[thread_id] = turn
        keeper = asyncio.create_task(self._keep_lock(lock, turn), name=f"lock:{thread_id}")
        answered = asyncio.Event()
        typing = asyncio.create_task(self._typing(adapter, target, answered), name="typing")
        try:
            try:
                result = await asyncio.wait_for(turn, self._config.turn_timeout_s)
            finally:
                answered.set()
                await typing
        except asyncio.CancelledError:
            if not turn.cancelled() or asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            _log.info("turn.stopped")
            await self._send_text(adapter, target, "Stopped.")
            return
        except TimeoutError:
            _log.warning("turn.timed_out", timeout_s=self._config.turn_timeout_s)
            await self._report(adapter, target, AgentError("turn timed out"))
            return
        except Exception as exc:
            await self._report(adapter, target, exc)
            return
        finally:
            keeper.cancel()
            self._running.pop(thread_id, None)
        structlog.contextvars.bind_contextvars(run_id=result.run_id)
        await self._reply(adapter, msg, target, thread_id, result)
        metrics.TURN_LATENCY.labels(platform=str(msg.platform)).observe(
            time.perf_counter() - started
        )

    async def _typing(self, adapter: Adapter, target: ReplyTarget, answered: asyncio.Event) -> None:
        """Show 'typing…' only once a turn outlasts `typing_delay_s`: an instant answer needs no
        indicator (nor the API call and rate budget it costs). A failing indicator never fails
        the turn."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(answered.wait(), self._config.typing_delay_s)
            return
        try:
            async with adapter.typing(target):
                await answered.wait()
        except SwitchboardError as exc:
            _log.warning("typing.failed", category=exc.category)
        except Exception as exc:  # a supervised side task: log it, never fail the turn
            _log.error("typing.crashed", error=type(exc).__name__, exc_info=exc)

    async def _keep_lock(self, lock: Lock, turn: asyncio.Task[TurnResult]) -> None:
        """Extend the lock while the turn runs; honour `/stop` sent from any process."""
        locks = self._s.locks
        interval = max(0.05, min(1.0, lock.ttl_s / 3))
        while not turn.done():
            await asyncio.sleep(interval)
            try:
                if await locks.take_stop(lock.thread_id):
                    _log.info("turn.stop_requested")
                    turn.cancel()
                    return
                if not await locks.extend(lock):
                    _log.warning("lock.lost")
                    return
            except SwitchboardError as exc:
                _log.warning("lock.extend_failed", category=exc.category)

    async def _reply(
        self,
        adapter: Adapter,
        msg: InboundMessage,
        target: ReplyTarget,
        thread_id: str,
        result: TurnResult,
    ) -> None:
        caps = adapter.capabilities
        if result.question is not None:
            sent = await self._ask(adapter, msg, target, thread_id, result.question)
        else:
            chunks = render_chunks(result.reply_text, caps) or render_chunks(FALLBACK_REPLY, caps)
            sent = await adapter.send(target, chunks)
        metrics.MESSAGES_OUT.labels(platform=str(msg.platform)).inc(len(sent.message_ids))
        # Needed only when someone replies to these messages, so it overlaps the turn's end.
        self._background(
            self._s.threads.remember_messages(
                str(msg.platform), sent.chat_id, list(sent.message_ids), thread_id
            )
        )
        _log.info("reply.sent", chunks=len(sent.message_ids))

    async def _ask(
        self,
        adapter: Adapter,
        msg: InboundMessage,
        target: ReplyTarget,
        thread_id: str,
        question: Question,
    ) -> SentRef:
        pending = PendingQuestion(
            asker_id=msg.sender_id, text=question.text, options=question.options
        )
        await self._s.questions.put(thread_id, pending)
        chunks = render_chunks(question.text, adapter.capabilities)
        if adapter.capabilities.buttons and question.options:
            prompt = QuestionPrompt(pending.question_id, question.options, msg.sender_id)
            sent = await adapter.ask(target, chunks, prompt)
        else:
            sent = await adapter.send(target, chunks)
        if sent.message_ids:
            await self._s.questions.set_message(thread_id, pending, sent.message_ids[-1])
        _log.info("question.asked", options=len(question.options))
        return sent

    # -- busy threads -------------------------------------------------------------------------

    async def _busy(
        self, adapter: Adapter, msg: InboundMessage, thread_id: str, work: _Work
    ) -> None:
        if self._config.busy == "reject":
            _log.info("message.rejected_busy")
            await adapter.notify(
                msg, "I'm still working on the previous message here; please resend in a moment."
            )
            return
        depth = await self._s.pending.push(
            thread_id,
            PendingMessage(
                sender_id=msg.sender_id,
                sender_name=msg.sender_name,
                text=work.text,
                message_id=msg.provider_message_id,
            ),
        )
        metrics.QUEUE_DEPTH.labels(platform=str(msg.platform)).set(depth)
        _log.info("message.queued", depth=depth)
        await self._ack(adapter, msg, AckKind.QUEUED)
        await self._pick_up_leftovers(adapter, msg, thread_id)

    async def _pick_up_leftovers(
        self, adapter: Adapter, msg: InboundMessage, thread_id: str
    ) -> None:
        """Close the race where a turn ended between our failed lock attempt and our push: if
        the queue is non-empty and the lock is free, run the follow-up ourselves."""
        if await self._s.pending.length(thread_id) == 0:
            return
        start = await self._s.turns.begin(thread_id, take_question=False)
        if start is None:
            return
        await self._hold(adapter, msg, thread_id, start.lock, None, start.queued)

    # -- output helpers ---------------------------------------------------------------------

    async def _send_text(self, adapter: Adapter, target: ReplyTarget, text: str) -> SentRef:
        return await adapter.send(target, render_chunks(text, adapter.capabilities))

    async def _report(
        self,
        adapter: Adapter,
        target: ReplyTarget,
        exc: BaseException,
        *,
        msg: InboundMessage | None = None,
    ) -> None:
        """The one place an exception becomes chat text: category message + reference id."""
        ref = secrets.token_hex(4)
        category = exc.category if isinstance(exc, SwitchboardError) else "internal"
        metrics.ERRORS.labels(category=category).inc()
        _log.error("turn.failed", ref=ref, category=category, exc_info=exc)
        text = f"Sorry — {_USER_MESSAGES.get(category, _USER_MESSAGES['internal'])} (ref {ref})"
        try:
            await adapter.send(target, [Chunk(text=text, plain=text)])
        except Exception as send_exc:
            _log.error("error_reply.failed", ref=ref, error=type(send_exc).__name__)


async def _allow() -> RateDecision:
    return RateDecision.ALLOW


def _context(msg: InboundMessage) -> TurnContext:
    return TurnContext(
        user_id=msg.sender_id,
        user_name=msg.sender_name,
        platform=str(msg.platform),
        conversation_key=conversation_key(msg),
    )


def _join_queued(queued: Sequence[PendingMessage], *, shared: bool) -> str:
    """Messages that waited, as one turn: in order, with sender names where several people talk."""
    if len(queued) == 1 and not shared:
        return queued[0].text
    if not shared:
        return "\n\n".join(m.text for m in queued)
    return "\n\n".join(f"{m.sender_name or m.sender_id}: {m.text}" for m in queued)
