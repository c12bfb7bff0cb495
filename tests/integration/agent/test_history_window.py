"""The built-in agent's history window on real Redis checkpoints with the scripted model: older
turns become one summary in the state, the model's requests stay near the window, tool calls stay
with their results, and the thread keeps one checkpoint of bounded size."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import redis.asyncio as aioredis
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from agent import AgentRuntime, DemoChatModel
from agent.history_window import SUMMARY_MARKER
from agent.result import TurnContext
from storage import Keys
from storage.checkpoint import RedisCheckpointSaver
from tests.integration.agent.conftest import ModelRequest, ModelRequests

__all__: list[str] = []

CTX = TurnContext(user_id="u-1", user_name="Ada", platform="console")
WINDOW = 600


def _text(n: int) -> str:
    """A 300-character message, numbered."""
    return f"message {n:03d} " + ("about the quarterly plan and its budget " * 8)[: 300 - 12]


def _is_summary_request(request: ModelRequest) -> bool:
    return any(SUMMARY_MARKER in str(m.content) for m in request.messages)


def _unpaired_tool_messages(messages: Sequence[BaseMessage]) -> list[str]:
    """Tool results whose call is not before them, and calls whose result is missing."""
    problems: list[str] = []
    calls: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            calls |= {c["id"] for c in message.tool_calls if c.get("id")}
        elif isinstance(message, ToolMessage):
            if message.tool_call_id not in calls:
                problems.append(f"result without call {message.tool_call_id}")
            answered.add(message.tool_call_id)
    problems += [f"call without result {c}" for c in calls - answered]
    return problems


def _windowed(
    make_runtime: Callable[..., AgentRuntime],
    redis: aioredis.Redis,
    prefix: str,
    **overrides: object,
) -> AgentRuntime:
    return make_runtime(
        checkpointer=RedisCheckpointSaver(redis, prefix=prefix, keep=0),
        history_tokens=WINDOW,
        **overrides,
    )


async def test_a_long_conversation_is_summarised_and_the_model_sees_about_one_window(
    make_runtime: Callable[..., AgentRuntime],
    redis: aioredis.Redis,
    prefix: str,
    keys: Keys,
    requests_seen: ModelRequests,
) -> None:
    runtime = _windowed(make_runtime, redis, prefix)
    thread = uuid.uuid4().hex
    blob_sizes = []
    for n in range(1, 31):
        result = await runtime.run_turn(thread, _text(n), CTX)
        assert result.reply_text == f"You said: {_text(n)}"
        blob_sizes.append(await redis.memory_usage(keys.checkpoint(thread, "blob")) or 0)

    turns = [r for r in requests_seen.of_thread(thread) if not _is_summary_request(r)]
    summaries = [r for r in requests_seen.of_thread(thread) if _is_summary_request(r)]
    assert len(turns) == 30 and 3 <= len(summaries) < 30
    largest = max(count_tokens_approximately(r.messages) for r in turns)
    assert largest <= WINDOW + 250, largest  # the window, plus the one turn that passed it
    messages = await runtime.messages(thread)
    assert messages[0].additional_kwargs.get("lc_source") == "summarization"
    assert "Summary of" in str(messages[0].content)
    assert max(blob_sizes[15:]) < 2 * max(blob_sizes[:10])  # flat, not growing with the thread
    assert await redis.zcard(keys.checkpoint(thread, "idx")) == 1

    recall = await runtime.run_turn(thread, "recall", CTX)
    assert recall.reply_text == f"You first said: {' '.join(_text(1).split()[:12])}"


async def test_the_window_adds_no_graph_step_beside_the_model_and_its_tools(
    make_runtime: Callable[..., AgentRuntime], redis: aioredis.Redis, prefix: str
) -> None:
    """A hook of its own would cost a LangGraph step per model call; the window runs inside
    the model call's middleware instead."""
    runtime = _windowed(make_runtime, redis, prefix)
    assert set(runtime.graph.get_graph().nodes) == {"__start__", "model", "tools", "__end__"}


async def test_tool_calls_are_never_separated_from_their_results(
    make_runtime: Callable[..., AgentRuntime],
    redis: aioredis.Redis,
    prefix: str,
    requests_seen: ModelRequests,
) -> None:
    runtime = _windowed(make_runtime, redis, prefix)
    thread = uuid.uuid4().hex
    for n in range(1, 25):
        text = "what time is it?" if n % 3 else _text(n)
        await runtime.run_turn(thread, text, CTX)
        assert _unpaired_tool_messages(await runtime.messages(thread)) == [], n

    requests = requests_seen.of_thread(thread)
    assert any(_is_summary_request(r) for r in requests)
    for request in requests:
        if not _is_summary_request(request):
            assert _unpaired_tool_messages(request.messages) == []


async def test_summaries_are_written_by_the_summary_model_when_one_is_set(
    make_runtime: Callable[..., AgentRuntime],
    redis: aioredis.Redis,
    prefix: str,
    requests_seen: ModelRequests,
) -> None:
    summarizer_seen = ModelRequests()
    runtime = _windowed(
        make_runtime, redis, prefix, summary_model=DemoChatModel(callbacks=[summarizer_seen])
    )
    thread = uuid.uuid4().hex
    for n in range(1, 12):
        await runtime.run_turn(thread, _text(n), CTX)

    assert summarizer_seen.seen and all(_is_summary_request(r) for r in summarizer_seen.seen)
    assert not any(_is_summary_request(r) for r in requests_seen.of_thread(thread))


async def test_a_window_of_zero_keeps_and_sends_the_whole_history(
    make_runtime: Callable[..., AgentRuntime],
    redis: aioredis.Redis,
    prefix: str,
    requests_seen: ModelRequests,
) -> None:
    runtime = make_runtime(
        checkpointer=RedisCheckpointSaver(redis, prefix=prefix, keep=0), history_tokens=0
    )
    thread = uuid.uuid4().hex
    for n in range(1, 12):
        await runtime.run_turn(thread, _text(n), CTX)

    assert len(await runtime.messages(thread)) == 22
    assert not any(_is_summary_request(r) for r in requests_seen.of_thread(thread))


async def test_questions_are_answered_typed_or_pressed_in_a_thread_whose_history_was_summarised(
    make_runtime: Callable[..., AgentRuntime],
    redis: aioredis.Redis,
    prefix: str,
) -> None:
    thread = uuid.uuid4().hex
    for n in range(1, 12):
        await _windowed(make_runtime, redis, prefix).run_turn(thread, _text(n), CTX)
    asked = await _windowed(make_runtime, redis, prefix).run_turn(thread, "choose", CTX)
    assert asked.question is not None

    typed = await _windowed(make_runtime, redis, prefix).run_turn(thread, "beta", CTX)
    assert typed.reply_text == "You chose: beta."
    await _windowed(make_runtime, redis, prefix).run_turn(thread, "choose", CTX)
    pressed = await _windowed(make_runtime, redis, prefix).resume(thread, "gamma", CTX)
    assert pressed.reply_text == "You chose: gamma."
    messages = await _windowed(make_runtime, redis, prefix).messages(thread)
    assert messages[0].additional_kwargs.get("lc_source") == "summarization"
    assert _unpaired_tool_messages(messages) == []
