"""Loop detection in real runs: warnings travel through Redis to the next model request only."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent import AgentRuntime, DemoChatModel, LoopPolicy, TurnContext
from agent.loop_detection import STOPPED_FALLBACK, LoopDetectionMiddleware
from agent.tools import builtin_tools
from storage import PendingWarnings
from tests.integration.agent.conftest import ModelRequests

CTX = TurnContext(user_id="u-1")
MARKERS = ("[LOOP DETECTED]", "[FORCED STOP]", "loop_warning", "[")


def _thread() -> str:
    return uuid.uuid4().hex


async def test_warning_reaches_exactly_the_next_request_after_the_tool_results_once(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    result = await runtime.run_turn(_thread(), "loop 4", CTX)
    assert result.reply_text == "Loop finished."
    requests = requests_seen.of_run(result.run_id)
    assert len(requests) == 5
    assert [len(r.warnings()) for r in requests] == [0, 0, 0, 1, 0]
    fourth = requests[3].messages
    warning = fourth[-1]
    assert isinstance(warning, HumanMessage) and warning.name == "loop_warning"
    assert "current_time" in str(warning.content)
    assert isinstance(fourth[-2], ToolMessage)
    assert all(not isinstance(m, ToolMessage) for m in fourth[fourth.index(warning) :])


async def test_warning_is_never_written_to_graph_state(
    runtime: AgentRuntime, warnings: PendingWarnings
) -> None:
    thread = _thread()
    result = await runtime.run_turn(thread, "loop 4", CTX)
    stored = await runtime.messages(thread)
    assert not [m for m in stored if m.name == "loop_warning"]
    assert [m.content for m in stored if isinstance(m, HumanMessage)] == ["loop 4"]
    assert await warnings.peek(thread, result.run_id) == []
    assert runtime.loop_detection.tracked_runs() == 0


async def test_warning_never_reaches_another_thread_or_a_later_run(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    looping, chatting = _thread(), _thread()
    looped, *_ = await asyncio.gather(
        runtime.run_turn(looping, "loop 4", CTX),
        runtime.run_turn(chatting, "what time is it", CTX),
        runtime.run_turn(chatting + "-2", "loop 2", CTX),
    )
    later = await runtime.run_turn(looping, "what time is it", CTX)
    warned = [r for r in requests_seen.seen if r.warnings()]
    assert [(r.thread_id, r.run_id) for r in warned] == [(looping, looped.run_id)]
    assert not any(r.warnings() for r in requests_seen.of_run(later.run_id))


async def test_repeats_across_separate_turns_never_trip_detection(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    thread = _thread()
    for _ in range(6):
        result = await runtime.run_turn(thread, "what time is it", CTX)
        assert result.reply_text.startswith("It is ")
    assert not any(r.warnings() for r in requests_seen.of_thread(thread))


async def test_run_start_clears_warnings_left_by_other_runs(
    runtime: AgentRuntime, warnings: PendingWarnings, requests_seen: ModelRequests
) -> None:
    thread = _thread()
    await warnings.add(thread, "crashed-run", "stale warning from a dead worker")
    result = await runtime.run_turn(thread, "what time is it", CTX)
    assert await warnings.peek(thread, "crashed-run") == []
    assert not any(r.warnings() for r in requests_seen.of_run(result.run_id))


async def test_run_end_clears_an_undelivered_warning(
    make_runtime: Callable[..., AgentRuntime], warnings: PendingWarnings
) -> None:
    # warn on the first call; the run then stops at the clarification before any next request
    runtime = make_runtime(loop_policy=LoopPolicy(per_tool={"ask_clarification": (1, 10)}))
    thread = _thread()
    result = await runtime.run_turn(thread, "choose", CTX)
    assert result.question is not None
    assert await warnings.peek(thread, result.run_id) == []


async def test_hard_stop_removes_the_tool_calls_and_yields_marker_free_text(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    thread = _thread()
    result = await runtime.run_turn(thread, "loop 10", CTX)
    assert result.reply_text == STOPPED_FALLBACK
    assert not any(marker in result.reply_text for marker in MARKERS)
    stored = await runtime.messages(thread)
    assert len([m for m in stored if isinstance(m, ToolMessage)]) == 4
    final = stored[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.content == STOPPED_FALLBACK
    # the stop asked the model once more for a final answer, with the instruction in-request only
    requests = requests_seen.of_run(result.run_id)
    assert len(requests) == 6 and requests[-1].warnings()
    assert (await runtime.run_turn(thread, "echo next", CTX)).reply_text == "next"


async def test_per_tool_override_stops_a_frequent_tool_early(
    make_runtime: Callable[..., AgentRuntime],
) -> None:
    runtime = make_runtime(loop_policy=LoopPolicy(per_tool={"current_time": (1, 2)}))
    thread = _thread()
    result = await runtime.run_turn(thread, "loop 5", CTX)
    assert result.reply_text == STOPPED_FALLBACK
    stored = await runtime.messages(thread)
    assert len([m for m in stored if isinstance(m, ToolMessage)]) == 1


async def test_sync_invoke_delivers_the_warning_through_the_owning_loop(
    warnings: PendingWarnings,
) -> None:
    requests = ModelRequests()
    middleware = LoopDetectionMiddleware(warnings)
    graph = create_agent(
        DemoChatModel(callbacks=[requests]),
        tools=list(builtin_tools()),
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    thread, run_id = _thread(), str(uuid.uuid4())
    await middleware.start_run(thread, run_id)
    config = {"configurable": {"thread_id": thread}, "run_id": uuid.UUID(run_id)}
    state = await asyncio.to_thread(graph.invoke, {"messages": [HumanMessage("loop 4")]}, config)
    await middleware.finish_run(thread, run_id)
    assert state["messages"][-1].content == "Loop finished."
    assert [len(r.warnings()) for r in requests.seen] == [0, 0, 0, 1, 0]
    assert await warnings.peek(thread, run_id) == []
