"""The agent runtime end to end: real Redis checkpoints, the scripted model, clean replies."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent import AgentRuntime, TracingConfig, TurnContext
from agent.demo import GREETING
from agent.repair import INTERRUPTED_RESULT
from switchboard.errors import AgentError
from tests.integration.agent.conftest import ModelRequests
from tests.support import wait_until

CTX = TurnContext(user_id="u-1", user_name="Ada", platform="console")


def _thread() -> str:
    return uuid.uuid4().hex


async def test_turn_returns_the_clean_reply_and_a_fresh_run_id(runtime: AgentRuntime) -> None:
    thread = _thread()
    first = await runtime.run_turn(thread, "hi", CTX)
    second = await runtime.run_turn(thread, "echo **bold**", CTX)
    assert first.reply_text == GREETING and first.question is None
    assert second.reply_text == "**bold**"
    assert first.run_id != second.run_id
    assert uuid.UUID(first.run_id)


async def test_tool_turn_reply_has_only_the_answer(runtime: AgentRuntime) -> None:
    thread = _thread()
    result = await runtime.run_turn(thread, "what time is it?", CTX)
    assert re.fullmatch(r"It is \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\.", result.reply_text)
    kinds = [type(m).__name__ for m in await runtime.messages(thread)]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]


async def test_history_is_kept_across_turns_and_runtime_instances(
    make_runtime: Callable[..., AgentRuntime],
) -> None:
    thread = _thread()
    await make_runtime().run_turn(thread, "my name is Ada", CTX)
    await make_runtime().run_turn(thread, "hello", CTX)
    result = await make_runtime().run_turn(thread, "recall", CTX)
    assert result.reply_text == "You first said: my name is Ada"


async def test_threads_are_isolated(runtime: AgentRuntime) -> None:
    a, b = _thread(), _thread()
    await runtime.run_turn(a, "first in a", CTX)
    await runtime.run_turn(b, "first in b", CTX)
    assert (await runtime.run_turn(a, "recall", CTX)).reply_text == "You first said: first in a"
    assert (await runtime.run_turn(b, "recall", CTX)).reply_text == "You first said: first in b"


async def test_model_failure_is_an_agent_error_and_the_thread_keeps_working(
    runtime: AgentRuntime,
) -> None:
    thread = _thread()
    with pytest.raises(AgentError) as caught:
        await runtime.run_turn(thread, "boom", CTX)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert (await runtime.run_turn(thread, "hi", CTX)).reply_text == GREETING


async def test_step_limit_is_an_agent_error(make_runtime: Callable[..., AgentRuntime]) -> None:
    runtime = make_runtime(recursion_limit=5)
    with pytest.raises(AgentError, match="step limit"):
        await runtime.run_turn(_thread(), "loop 4", CTX)


async def test_a_stopped_tool_call_is_answered_in_the_next_request_only(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    """A turn cut off between a tool call and its result leaves the call unanswered in state."""
    thread = _thread()
    config = {"configurable": {"thread_id": thread}}
    dangling = AIMessage(
        "", tool_calls=[{"name": "current_time", "args": {}, "id": "c-lost", "type": "tool_call"}]
    )
    await runtime.graph.aupdate_state(
        config, {"messages": [HumanMessage("what time"), dangling]}, as_node="model"
    )
    await runtime.graph.aupdate_state(config, None, as_node="tools")
    result = await runtime.run_turn(thread, "echo still here", CTX)
    assert result.reply_text == "still here"
    (request,) = requests_seen.of_run(result.run_id)
    sent = [(type(m).__name__, getattr(m, "tool_call_id", None)) for m in request.messages]
    assert sent[2:5] == [("AIMessage", None), ("ToolMessage", "c-lost"), ("HumanMessage", None)]
    assert request.messages[3].content == INTERRUPTED_RESULT
    stored = await runtime.messages(thread)
    assert not any(isinstance(m, ToolMessage) for m in stored)


async def test_run_metadata_reaches_the_model_with_thread_user_and_run(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    thread = _thread()
    context = TurnContext(user_id="u-9", platform="slack", metadata={"team": "T1"})
    result = await runtime.run_turn(thread, "hi", context)
    (request,) = requests_seen.of_run(result.run_id)
    assert request.metadata["session_id"] == thread
    assert request.metadata["user_id"] == "u-9"
    assert request.metadata["platform"] == "slack"
    assert request.metadata["team"] == "T1"


class _Runs(BaseCallbackHandler):
    run_inline = True

    def __init__(self) -> None:
        self.roots: list[dict[str, Any]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        if kwargs.get("parent_run_id") is None:
            self.roots.append(kwargs)


async def test_tracing_callbacks_attach_once_at_the_graph_root(
    make_runtime: Callable[..., AgentRuntime],
) -> None:
    traced = _Runs()
    tracing = TracingConfig(
        env_name="test", model_spec="demo", trace_name="sb.turn", callbacks=(traced,)
    )
    runtime = make_runtime(tracing=tracing)
    thread = _thread()
    first = await runtime.run_turn(thread, "hi", CTX)
    second = await runtime.run_turn(thread, "what time is it", CTX)
    assert [str(r["run_id"]) for r in traced.roots] == [first.run_id, second.run_id]
    root = traced.roots[0]
    assert root["name"] == "sb.turn"
    assert {"env:test", "model:demo"} <= set(root["tags"])
    assert root["metadata"]["session_id"] == thread
    assert root["metadata"]["user_id"] == "u-1"


async def test_tool_results_are_tool_messages_not_reply_text(runtime: AgentRuntime) -> None:
    thread = _thread()
    result = await runtime.run_turn(thread, "time please", CTX)
    stored = await runtime.messages(thread)
    tool = next(m for m in stored if isinstance(m, ToolMessage))
    assert result.reply_text == f"It is {tool.content}."


async def test_a_cancelled_turn_leaves_the_thread_usable(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    thread = _thread()
    turn = asyncio.create_task(runtime.run_turn(thread, "slow 30", CTX))
    await wait_until(lambda: requests_seen.of_thread(thread))
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert runtime.loop_detection.tracked_runs() == 0
    assert (await runtime.run_turn(thread, "echo after stop", CTX)).reply_text == "after stop"
