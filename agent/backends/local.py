"""Running turns of a compiled LangGraph graph in this process, on our Redis checkpointer.

Both local backends (the built-in `create_agent` and an operator's own graph) run through this
one class, so they share what a turn means here:

- a fresh run id per call, and the thread-lock token in `configurable["fence"]`: the checkpoint
  saver refuses writes of a turn whose lock was lost (`storage/checkpoint.py`);
- durability "exit": one checkpoint write when the run ends (finished, interrupted, failed), so a
  worker that dies mid-turn leaves the thread as the previous turn left it;
- a `UsageMeter` per run (`TurnResult.usage`), loop-detection run bookkeeping, tracing metadata;
- clarifications are interrupts: `resume` answers the waiting one with `Command(resume=…)`;
- the reply is `extract_reply` of the final state: this turn's assistant text, or the question;
  the turn's files are its `send_file` artifacts and `files` state key, references read from
  `files_dir` off the event loop (`agent.attachments.load_turn_files`);
- steering: `TurnContext.steer` goes into `configurable` when the graph takes it (the built-in
  one does; your own `create_agent` graph with `SteerMiddleware`), see `agent.steer`;
- earlier messages of the conversation (`TurnContext.context_messages`) go before the
  HumanMessage as one quoted block of their own (`agent.quoted`);
- files the user sent (`TurnContext.files`) become content blocks of the HumanMessage
  (`agent.attachments`; images over `max_image_pixels` are refused undecoded); an answer to a clarification that comes with files starts a new turn
  instead of resuming (a tool result cannot carry an image) when the graph repairs its own
  thread, and otherwise resumes with the files as text.

A graph that cannot repair its own thread (the built-in one can: `ThreadRepairMiddleware`) gets
`answer_on_turn=True`: a new message on a thread that waits for an answer resumes the question
with it, because LangGraph would otherwise drop the interrupt and leave a dangling tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError
from langgraph.types import Command, Interrupt

from agent.attachments import (
    FILES_STATE_KEY,
    MAX_IMAGE_PIXELS,
    load_turn_files,
    read_human_content,
    read_text_only,
    turn_file_entries,
)
from agent.clarification import question_from_interrupt
from agent.loop_detection import STOPPED_FALLBACK, LoopDetectionMiddleware
from agent.quoted import context_message
from agent.reply import extract_reply, last_human_text
from agent.result import FileData, Question, TurnContext, TurnResult
from agent.steer import STEER_KEY, graph_steers
from agent.streamed_text import StreamedText
from agent.tracing import TracingConfig, run_metadata
from agent.transcription import Transcriber, with_transcripts
from agent.usage import ModelPrice, UsageMeter
from storage.checkpoint import FENCE_KEY
from switchboard.errors import AgentError, SwitchboardError

__all__ = ["LocalGraphRunner", "LoopStopped", "first_question"]

_log = structlog.get_logger(__name__)


class LoopStopped(Exception):
    """Raised by a run guard (`agent.backends.custom.LoopGuard`) to end a looping run."""


class LocalGraphRunner:
    """Turns of one compiled graph; build once per process, call concurrently for many threads."""

    def __init__(
        self,
        graph: Any,
        *,
        loops: LoopDetectionMiddleware,
        kind: str,
        recursion_limit: int = 50,
        tracing: TracingConfig | None = None,
        clear_stale_warnings: bool = True,
        price: ModelPrice | None = None,
        answer_on_turn: bool = False,
        tools: Sequence[str] = (),
        run_guard: type[BaseCallbackHandler] | None = None,
        transcriber: Transcriber | None = None,
        files_dir: Path | None = None,
        max_image_pixels: int = MAX_IMAGE_PIXELS,
    ) -> None:
        """`run_guard`: a callback class made per run with the run id (custom graphs' loop stop);
        `transcriber`: voice notes and audio files reach the model as their transcript;
        `files_dir`: where the turn's file references are read (`agent.sandbox`)."""
        self.graph = graph
        self.loops = loops
        self._kind = kind
        self._recursion_limit = recursion_limit
        self._tracing = tracing
        self._clear_stale = clear_stale_warnings
        self._price = price
        self._answer_on_turn = answer_on_turn
        self._tools = tuple(tools)
        self._run_guard = run_guard
        self.transcriber = transcriber
        self.files_dir = files_dir
        self.max_image_pixels = max_image_pixels
        self.steers = graph_steers(graph)
        """Whether messages sent during a run can join it (`agent.steer`); the manager falls
        back to queueing them otherwise."""

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def loop_detection(self) -> LoopDetectionMiddleware:
        return self.loops

    def tool_names(self) -> tuple[str, ...]:
        return self._tools

    def set_tools(self, graph: Any, tools: Sequence[str]) -> None:
        """Swap in a rebuilt graph (MCP tools reloaded); runs already started keep the old one."""
        self.graph = graph
        self._tools = tuple(tools)

    async def aclose(self) -> None:
        return None

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult:
        """A new user message; if a clarification is waiting, the message answers it."""
        context = await self._transcribed(context)
        if self._answer_on_turn and await self._interrupts(thread_id):
            return await self.resume(thread_id, text, context)
        human = await self._human(text, context)
        payload: dict[str, Any] = {"messages": [*context_message(context.context_messages), human]}
        if FILES_STATE_KEY in getattr(self.graph, "channels", {}):
            payload[FILES_STATE_KEY] = []  # a graph's `files` holds this turn's files only
        return await self._invoke(thread_id, payload, context, resumed=False)

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult:
        """The answer to the waiting clarification; a new turn if nothing is waiting."""
        context = await self._transcribed(context)
        if context.files and not self._answer_on_turn:
            _log.info("agent.answer_with_files_as_turn", files=len(context.files))
            human = await self._human(answer, context)
            payload = {"messages": [*context_message(context.context_messages), human]}
            return await self._invoke(thread_id, payload, context, resumed=False)
        if context.files:
            answer = await read_text_only(
                answer, context.files, max_image_pixels=self.max_image_pixels
            )
        pending = await self._interrupts(thread_id)
        if not pending:
            _log.info("agent.resume_without_question")
            payload = {"messages": [HumanMessage(content=answer)]}
            return await self._invoke(thread_id, payload, context, resumed=False)
        # Several parallel questions: answer the first; the others interrupt again.
        value: Any = answer if len(pending) == 1 else {pending[0].id: answer}
        return await self._invoke(thread_id, Command(resume=value), context, resumed=True)

    async def pending_question(self, thread_id: str) -> Question | None:
        """The clarification the thread waits on, read from its checkpoint (any process)."""
        return first_question(await self._interrupts(thread_id))

    async def messages(self, thread_id: str) -> list[BaseMessage]:
        """The thread's stored messages (what the model saw, minus injected warnings)."""
        state = await self.graph.aget_state(_thread_config(thread_id))
        return list(state.values.get("messages", []))

    async def input_kept(self, thread_id: str, text: str) -> bool:
        """Whether an interrupted run's user message made it into the stored thread (a run
        cancelled in this process writes its state on the way out): the next turn then sends
        only what came after, instead of the same message twice. False when unsure."""
        if not text.strip():
            return False
        try:
            last = last_human_text(await self.messages(thread_id))
        except Exception as exc:
            _log.warning("agent.input_check_failed", error=type(exc).__name__)
            return False
        return last is not None and text in last

    async def _human(self, text: str, context: TurnContext) -> HumanMessage:
        """The turn's HumanMessage; images and PDFs are decoded in the worker's decode pool
        (`agent.decode_pool`), bounded and stopped with the turn."""
        if not context.files:
            return HumanMessage(content=text)
        content = await read_human_content(
            text, context.files, max_image_pixels=self.max_image_pixels
        )
        return HumanMessage(content=content)

    async def _files(self, output: dict[str, Any]) -> tuple[FileData, ...]:
        """This turn's files; reading them from disk is blocking I/O, so off the loop."""
        entries = turn_file_entries(output)
        if not entries:
            return ()
        return await asyncio.to_thread(load_turn_files, entries, self.files_dir)

    async def _transcribed(self, context: TurnContext) -> TurnContext:
        if not context.files or self.transcriber is None:
            return context
        return replace(context, files=await with_transcripts(context.files, self.transcriber))

    async def _interrupts(self, thread_id: str) -> list[Interrupt]:
        state = await self.graph.aget_state(_thread_config(thread_id))
        return list(state.interrupts)

    async def _invoke(
        self,
        thread_id: str,
        payload: Command[Any] | dict[str, Any],
        context: TurnContext,
        *,
        resumed: bool,
    ) -> TurnResult:
        run_id = str(uuid.uuid4())
        config = self._config(thread_id, run_id, context)
        meter = UsageMeter(self._price)  # per run: sees every model call, tool loops included
        callbacks: list[BaseCallbackHandler] = [meter]
        if self._run_guard is not None:
            callbacks.append(self._run_guard())
        config["callbacks"] = callbacks
        started = time.perf_counter()
        # Clearing other runs' warnings touches only their keys, so it overlaps the run.
        clearing = asyncio.ensure_future(
            self.loops.start_run(thread_id, run_id, clear_others=self._clear_stale)
        )
        graph = self.graph
        try:
            if context.on_text is not None:
                output = await _streamed(graph, payload, config, context)
            else:
                output = await graph.ainvoke(payload, config, durability="exit")
        except SwitchboardError:
            raise
        except LoopStopped:
            _log.warning("loop.stopped", thread_id=thread_id, run_id=run_id, backend=self._kind)
            return TurnResult(STOPPED_FALLBACK, run_id, usage=meter.usage())
        except GraphRecursionError as exc:
            raise AgentError("the agent hit its step limit") from exc
        except Exception as exc:
            raise AgentError(f"the agent run failed ({exc.__class__.__name__})") from exc
        finally:
            await self._finish(thread_id, run_id, clearing)
        question = first_question(output.get("__interrupt__") or ())
        reply = extract_reply(output.get("messages") or (), question)
        _log.debug(
            "agent.run_finished",
            run_id=run_id,
            backend=self._kind,
            resumed=resumed,
            asked=question is not None,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return TurnResult(
            reply_text=reply,
            run_id=run_id,
            question=question,
            usage=meter.usage(),
            files=await self._files(output) if question is None else (),
        )

    async def _finish(self, thread_id: str, run_id: str, clearing: asyncio.Future[None]) -> None:
        with contextlib.suppress(SwitchboardError):  # the 1 h TTL cleans up what this misses
            await clearing
        with contextlib.suppress(SwitchboardError):
            await self.loops.finish_run(thread_id, run_id)

    def _config(self, thread_id: str, run_id: str, context: TurnContext) -> RunnableConfig:
        metadata = run_metadata(
            thread_id=thread_id, run_id=run_id, context=context, tracing=self._tracing
        )
        configurable: dict[str, Any] = {"thread_id": thread_id}
        if context.fence:
            configurable[FENCE_KEY] = context.fence
        if context.steer is not None and self.steers:
            configurable[STEER_KEY] = context.steer
        config: RunnableConfig = {
            "configurable": configurable,
            "run_id": uuid.UUID(run_id),
            "metadata": metadata,
            "recursion_limit": self._recursion_limit,
        }
        if self._tracing is not None:
            config["run_name"] = str(metadata.get("trace_name") or self._tracing.trace_name)
            config["tags"] = list(self._tracing.tags)
        return config


async def _streamed(
    graph: Any, payload: Any, config: RunnableConfig, context: TurnContext
) -> dict[str, Any]:
    """`ainvoke`'s result, while handing the model's text to `context.on_text` as it is
    written (LangGraph's "messages" stream) and announcing tool steps to `context.on_status`.
    Only assistant text reaches the sinks (`agent.streamed_text`)."""
    assert context.on_text is not None
    latest: dict[str, Any] = {}
    interrupts: list[Interrupt] = []
    relay = StreamedText(context)
    async for mode, chunk in graph.astream(
        payload, config, stream_mode=["updates", "values", "messages"], durability="exit"
    ):
        if mode == "values" and isinstance(chunk, dict):
            latest = chunk
        elif mode == "updates" and isinstance(chunk, dict) and "__interrupt__" in chunk:
            interrupts.extend(chunk["__interrupt__"])
        elif mode == "messages":
            message, meta = chunk
            await relay.relay(message, meta)
    return {**latest, "__interrupt__": interrupts} if interrupts else latest


def _thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def first_question(interrupts: Sequence[Interrupt | Any]) -> Question | None:
    """The first interrupt that reads as a question (`Interrupt` objects or server dicts)."""
    for pending in interrupts:
        value = pending.get("value") if isinstance(pending, dict) else pending.value
        question = question_from_interrupt(value)
        if question is not None:
            return question
    return None
