"""The agent runtime: one compiled `create_agent` graph per process, one run per call.

The graph is built once (model, tools, middleware, checkpointer, tracing callbacks) and every turn
only builds a small config: the thread id, a fresh run id, metadata, the recursion limit. Nothing
is compiled or bound per call.

Clarifications:

- `resume(thread, answer)` reads the thread's pending interrupt from the checkpoint and resumes it
  with `Command(resume=answer)`: the waiting `ask_clarification` call completes and the model sees
  the answer as its result. With nothing pending it starts a new turn with the text instead (the
  question may have been answered meanwhile from another chat client).
- `run_turn(thread, text)` on a thread that waits for an answer (the manager normally routes such
  a message as the answer, but the runtime must cope): the text ANSWERS the question. LangGraph
  drops the interrupt when a run starts with new input, so `ThreadRepairMiddleware` turns the
  message into the waiting call's tool result, in the stored thread too. The outcome equals a
  resume with that text, no tool call is left dangling, and a plain turn needs no checkpoint read
  up front (which would double the checkpoint loading of every turn).

Because the interrupt lives in the checkpoint, a resume works in any process, after a restart too.

Durability is "exit": a turn's state is written once, when the run ends (finished, interrupted
for a question, or failed), instead of after every step. A chat turn is the unit users see; a
worker that dies mid-turn leaves the thread exactly as the previous turn left it (no half-run with
a dangling tool call), and a turn costs one checkpoint write instead of one per step.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Sequence
from typing import Any

import structlog
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphRecursionError
from langgraph.types import Command, Interrupt

from agent.clarification import question_from_interrupt
from agent.loop_detection import LoopDetectionMiddleware, LoopPolicy
from agent.middleware import TurnMiddleware
from agent.repair import ThreadRepairMiddleware
from agent.reply import extract_reply
from agent.result import Question, TurnContext, TurnResult
from agent.tools import builtin_tools
from agent.tracing import TracingConfig, run_metadata
from agent.usage import ModelPrice, UsageMeter
from storage.checkpoint import FENCE_KEY
from storage.warnings import PendingWarnings
from switchboard.errors import AgentError, SwitchboardError

__all__ = ["AgentRuntime"]

_log = structlog.get_logger(__name__)


class AgentRuntime:
    """Runs turns of one agent on checkpointed threads; build it once per process."""

    def __init__(
        self,
        *,
        model: BaseChatModel,
        checkpointer: BaseCheckpointSaver[Any],
        warnings: PendingWarnings,
        system_prompt: str,
        recursion_limit: int = 50,
        tracing: TracingConfig | None = None,
        extra_tools: Sequence[BaseTool] = (),
        loop_policy: LoopPolicy | None = None,
        clear_stale_warnings: bool = True,
        price: ModelPrice | None = None,
    ) -> None:
        """`clear_stale_warnings=False` when every turn is started through a caller that already
        drops earlier runs' warnings with the thread lock (the manager's `TurnGate.begin`).
        `price` costs model calls whose provider reports no cost (`TurnResult.usage`)."""
        self._loops = LoopDetectionMiddleware(warnings, policy=loop_policy)
        graph: Any = create_agent(
            model,
            tools=[*builtin_tools(), *extra_tools],
            system_prompt=system_prompt,
            middleware=[TurnMiddleware(ThreadRepairMiddleware(), self._loops)],
            checkpointer=checkpointer,
        )
        if tracing is not None and tracing.callbacks:
            graph = graph.with_config(callbacks=list(tracing.callbacks))
        self._graph = graph
        self._recursion_limit = recursion_limit
        self._tracing = tracing
        self._clear_stale = clear_stale_warnings
        self._price = price

    @property
    def graph(self) -> Any:
        """The compiled graph (for state inspection in tests and benchmarks)."""
        return self._graph

    @property
    def loop_detection(self) -> LoopDetectionMiddleware:
        return self._loops

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult:
        """A new user message; if a clarification is waiting, the message answers it."""
        return await self._invoke(
            thread_id, {"messages": [HumanMessage(content=text)]}, context, resumed=False
        )

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult:
        """The answer to the waiting clarification; a new turn if nothing is waiting."""
        pending = await self._interrupts(thread_id)
        if not pending:
            _log.info("agent.resume_without_question")
            return await self.run_turn(thread_id, answer, context)
        # Several parallel questions: answer the first; the others interrupt again.
        value: Any = answer if len(pending) == 1 else {pending[0].id: answer}
        return await self._invoke(thread_id, Command(resume=value), context, resumed=True)

    async def pending_question(self, thread_id: str) -> Question | None:
        """The clarification the thread waits on, read from its checkpoint (any process)."""
        return _question(await self._interrupts(thread_id))

    async def messages(self, thread_id: str) -> list[BaseMessage]:
        """The thread's stored messages (what the model saw, minus injected warnings)."""
        state = await self._graph.aget_state(_thread_config(thread_id))
        return list(state.values.get("messages", []))

    async def _interrupts(self, thread_id: str) -> list[Interrupt]:
        state = await self._graph.aget_state(_thread_config(thread_id))
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
        config["callbacks"] = [meter]
        started = time.perf_counter()
        # Clearing other runs' warnings touches only their keys, so it overlaps the run.
        clearing = asyncio.ensure_future(
            self._loops.start_run(thread_id, run_id, clear_others=self._clear_stale)
        )
        try:
            output = await self._graph.ainvoke(payload, config, durability="exit")
        except SwitchboardError:
            raise
        except GraphRecursionError as exc:
            raise AgentError("the agent hit its step limit") from exc
        except Exception as exc:
            raise AgentError(f"the agent run failed ({exc.__class__.__name__})") from exc
        finally:
            await self._finish(thread_id, run_id, clearing)
        question = _question(output.get("__interrupt__") or ())
        reply = extract_reply(output.get("messages") or (), question)
        _log.debug(
            "agent.run_finished",
            run_id=run_id,
            resumed=resumed,
            asked=question is not None,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return TurnResult(reply_text=reply, run_id=run_id, question=question, usage=meter.usage())

    async def _finish(self, thread_id: str, run_id: str, clearing: asyncio.Future[None]) -> None:
        with contextlib.suppress(SwitchboardError):  # the 1 h TTL cleans up what this misses
            await clearing
        with contextlib.suppress(SwitchboardError):
            await self._loops.finish_run(thread_id, run_id)

    def _config(self, thread_id: str, run_id: str, context: TurnContext) -> RunnableConfig:
        metadata = run_metadata(
            thread_id=thread_id, run_id=run_id, context=context, tracing=self._tracing
        )
        configurable: dict[str, Any] = {"thread_id": thread_id}
        if context.fence:
            configurable[FENCE_KEY] = context.fence
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


def _thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _question(interrupts: Sequence[Interrupt]) -> Question | None:
    for pending in interrupts:
        question = question_from_interrupt(pending.value)
        if question is not None:
            return question
    return None
