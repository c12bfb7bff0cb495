"""One agent run for a batch: shown as typing or as a streamed reply, cancelled by `/stop`, a
timeout or a lost lock (the hold around it cancels the whole batch then), or interrupted by a new
message (`busy=interrupt`: a streamed partial stays, marked, and the turn answers the grown batch).

With streaming on and an adapter that `Streams`, the model's text goes to a `ReplyStream` as it
is written; the turn's delivery then settles that stream on the final chunks (`finish`), or takes
it back before a question is sent whole (`cancel`). Whether a turn streams at all is the
`StreamPolicy`'s call: only while replies are slow enough for a stream to be seen.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace

import structlog

from agent.result import TurnResult
from channels.adapter import ReplyStream, ShowsWorking, Streams
from channels.manager.config import ManagerConfig, TurnRunner
from channels.manager.context import TurnSession
from channels.manager.replies.responder import Responder
from channels.manager.turns.batches import Batch
from channels.manager.turns.hold import LockLost
from channels.manager.turns.stream_policy import StreamPolicy
from switchboard.errors import AgentError, FencedOut, StorageError

__all__ = ["AgentRuns", "RunOutcome"]

_log = structlog.get_logger(__name__)

STOPPED_TEXT = "Stopped."
STOPPED_NOTE = "(stopped)"
INTERRUPTED_NOTE = "(interrupted)"


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """The agent's result, or what to say instead (stopped, timed out, failed with a reference
    id already logged); neither when the chat already saw the end (a stopped stream's note)."""

    result: TurnResult | None = None
    said: str = ""
    interrupted: bool = False  # a new message cancelled the run: answer the grown batch instead


class _Shown:
    """What a streamed turn shows. Nothing is shown before `after_s`: a reply written faster
    than that is simply sent, with no draft or edit to pay for (nor the chat's send budget
    they use). The first text shown also ends the typing hint."""

    def __init__(self, stream: ReplyStream, answered: asyncio.Event, after_s: float) -> None:
        self.stream = stream
        self._answered = answered
        self._parts: list[str] = []
        self._status = ""
        self._from = time.monotonic() + after_s
        self.anything = False  # whether the chat has seen any of it

    def _due(self) -> bool:
        return self.anything or time.monotonic() >= self._from

    async def text(self, delta: str) -> None:
        self._parts.append(delta)
        if self._due():
            self._answered.set()
            self.anything = True
            await self.stream.update("".join(self._parts))

    async def status(self, line: str) -> None:
        self._parts.clear()  # a tool step: what follows is a new answer, not a continuation
        if isinstance(self.stream, ShowsWorking):  # outside the reply: shown at once
            await self.stream.working(line)
        if self._due():
            self.anything = True
            await self.stream.status(line)


class AgentRuns:
    def __init__(
        self,
        *,
        runtime: TurnRunner,
        responder: Responder,
        config: ManagerConfig,
    ) -> None:
        self._runtime = runtime
        self._say = responder
        self._config = config
        self._running: dict[str, asyncio.Task[TurnResult]] = {}
        self._interrupted: set[str] = set()
        self._streams = StreamPolicy(config.stream_after_s, max_open=config.max_streams)

    def stop_local(self, thread_id: str, *, interrupt: bool = False) -> bool:
        """Cancel the thread's run in this process; True if one was running. `interrupt`: for a
        new message, whose batch is then answered instead of saying "Stopped."."""
        turn = self._running.get(thread_id)
        if turn is None or turn.done():
            return False
        if interrupt:
            self._interrupted.add(thread_id)
        turn.cancel()
        return True

    async def input_kept(self, thread_id: str, text: str) -> bool:
        """Whether an interrupted run left its user message in the thread's history; an agent
        that cannot tell says no (the next turn then repeats it)."""
        check = getattr(self._runtime, "input_kept", None)
        return bool(await check(thread_id, text)) if check is not None else False

    async def run(self, session: TurnSession, batch: Batch) -> RunOutcome:
        """Run the batch's turn. A kept stream is left in `session.stream`. Storage errors and
        a lost lock propagate: the batch is not answered then."""
        runner = self._runtime.resume if batch.resume else self._runtime.run_turn
        thread_id, adapter, target = session.thread_id, session.adapter, session.target
        assert target is not None
        answered = asyncio.Event()
        shown: _Shown | None = None
        context = session.context
        streaming = self._config.streaming if session.streaming is None else session.streaming
        if streaming and isinstance(adapter, Streams) and self._streams.wanted():
            shown = _Shown(adapter.open_stream(target), answered, self._config.stream_after_s)
            context = replace(context, on_text=shown.text, on_status=shown.status)
            self._streams.opened()
        started = time.monotonic()
        turn = asyncio.create_task(runner(thread_id, batch.text, context), name=f"turn:{thread_id}")
        self._running[thread_id] = turn
        typing = asyncio.create_task(self._say.typing_until(adapter, target, answered))
        try:
            try:
                result = await asyncio.wait_for(turn, self._config.turn_timeout_s)
            finally:
                answered.set()
                await typing
            self._streams.record(time.monotonic() - started, running=len(self._running))
            session.stream = shown.stream if shown is not None else None
            return RunOutcome(result=result)
        except asyncio.CancelledError:
            this = asyncio.current_task()
            assert this is not None  # asyncio runs this coroutine in a task
            if not turn.cancelled() or this.cancelling():
                await _take_back(shown)
                raise
            if thread_id in self._interrupted:
                _log.info("turn.interrupted")
                if shown is not None and shown.anything:
                    await shown.stream.cancel(INTERRUPTED_NOTE)  # what was shown stays, marked
                else:
                    await _take_back(shown)
                return RunOutcome(interrupted=True)
            _log.info("turn.stopped")
            if shown is not None and shown.anything:
                await shown.stream.cancel(STOPPED_NOTE)
                return RunOutcome()
            await _take_back(shown)
            return RunOutcome(said=STOPPED_TEXT)
        except FencedOut:
            await _take_back(shown)
            raise LockLost from None
        except StorageError:
            await _take_back(shown)
            raise  # not an answer: the batch stays queued and is run again once Redis is back
        except TimeoutError:
            await _take_back(shown)
            return RunOutcome(said=self._say.failure_text(AgentError("turn timed out")))
        except Exception as exc:
            await _take_back(shown)
            return RunOutcome(said=self._say.failure_text(exc))
        finally:
            if shown is not None:
                self._streams.closed()
            self._running.pop(thread_id, None)
            self._interrupted.discard(thread_id)


async def _take_back(shown: _Shown | None) -> None:
    """Remove a partial streamed reply; a failure only leaves it visible."""
    if shown is None:
        return
    try:
        await shown.stream.cancel(None)
    except Exception as exc:  # the stream is cosmetic here: never mask the real outcome
        _log.warning("stream.cancel_failed", error=type(exc).__name__)
