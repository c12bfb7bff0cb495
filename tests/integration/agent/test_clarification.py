"""Clarification by interrupt/resume, stored in the Redis checkpoint (so it survives a restart)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agent import AgentRuntime, TurnContext
from tests.integration.agent.conftest import ModelRequests

CTX = TurnContext(user_id="u-1")
QUESTION_TEXT = "🔀 I need one detail.\n\nWhich one do you mean?\n\n1. alpha\n2. beta\n3. gamma"


def _thread() -> str:
    return uuid.uuid4().hex


def _assert_every_call_answered_once(messages: list[BaseMessage]) -> None:
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(calls) == sorted(results)


async def test_ambiguous_request_ends_the_turn_with_the_formatted_question(
    runtime: AgentRuntime,
) -> None:
    thread = _thread()
    result = await runtime.run_turn(thread, "choose", CTX)
    assert result.question is not None
    assert result.question.text == QUESTION_TEXT
    assert result.question.options == ("alpha", "beta", "gamma")
    assert result.question.clarification_type == "approach_choice"
    assert result.reply_text == QUESTION_TEXT
    assert await runtime.pending_question(thread) == result.question


async def test_resume_completes_the_same_tool_call_and_keeps_history(
    runtime: AgentRuntime,
) -> None:
    thread = _thread()
    await runtime.run_turn(thread, "hello", CTX)
    await runtime.run_turn(thread, "choose", CTX)
    asked = (await runtime.messages(thread))[-1]
    assert isinstance(asked, AIMessage)
    (call,) = asked.tool_calls

    result = await runtime.resume(thread, "beta", CTX)

    assert result.reply_text == "You chose: beta." and result.question is None
    stored = await runtime.messages(thread)
    assert [type(m).__name__ for m in stored] == [
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    answer = stored[4]
    assert isinstance(answer, ToolMessage)
    assert (answer.tool_call_id, answer.content) == (call["id"], "beta")
    assert stored[3].id == asked.id
    assert await runtime.pending_question(thread) is None
    assert (await runtime.run_turn(thread, "recall", CTX)).reply_text == "You first said: hello"


async def test_resume_in_a_fresh_runtime_after_a_restart(
    make_runtime: Callable[..., AgentRuntime],
) -> None:
    thread = _thread()
    before = make_runtime()
    await before.run_turn(thread, "my name is Ada", CTX)
    asked = await before.run_turn(thread, "choose", CTX)
    del before

    after = make_runtime()  # new process: new saver instance, same Redis
    assert await after.pending_question(thread) == asked.question
    result = await after.resume(thread, "gamma", CTX)
    assert result.reply_text == "You chose: gamma."
    stored = await after.messages(thread)
    assert [m.content for m in stored if isinstance(m, HumanMessage)] == [
        "my name is Ada",
        "choose",
    ]
    _assert_every_call_answered_once(stored)
    assert (await after.run_turn(thread, "recall", CTX)).reply_text == (
        "You first said: my name is Ada"
    )


async def test_new_message_while_waiting_answers_the_question_without_a_dangling_call(
    runtime: AgentRuntime, requests_seen: ModelRequests
) -> None:
    thread = _thread()
    await runtime.run_turn(thread, "choose", CTX)
    result = await runtime.run_turn(thread, "alpha", CTX)
    assert result.reply_text == "You chose: alpha." and result.question is None
    stored = await runtime.messages(thread)
    assert [type(m).__name__ for m in stored] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    _assert_every_call_answered_once(stored)
    assert await runtime.pending_question(thread) is None
    (request,) = requests_seen.of_run(result.run_id)
    assert isinstance(request.messages[-1], ToolMessage)
    assert request.messages[-1].content == "alpha"


async def test_answer_via_run_turn_survives_a_restart(
    make_runtime: Callable[..., AgentRuntime],
) -> None:
    thread = _thread()
    await make_runtime().run_turn(thread, "choose", CTX)
    result = await make_runtime().run_turn(thread, "beta", CTX)
    assert result.reply_text == "You chose: beta."


async def test_resume_without_a_waiting_question_starts_a_new_turn(runtime: AgentRuntime) -> None:
    thread = _thread()
    await runtime.run_turn(thread, "hello", CTX)
    result = await runtime.resume(thread, "echo late answer", CTX)
    assert result.reply_text == "late answer"
    fresh = await runtime.resume(_thread(), "echo first", CTX)
    assert fresh.reply_text == "first"


async def test_a_second_question_in_a_later_turn_is_asked_again(runtime: AgentRuntime) -> None:
    thread = _thread()
    await runtime.run_turn(thread, "choose", CTX)
    await runtime.resume(thread, "beta", CTX)
    again = await runtime.run_turn(thread, "choose again", CTX)
    assert again.question is not None
    assert (await runtime.resume(thread, "gamma", CTX)).reply_text == "You chose: gamma."
    _assert_every_call_answered_once(await runtime.messages(thread))


async def test_parallel_questions_are_answered_one_at_a_time(runtime: AgentRuntime) -> None:
    thread = _thread()
    config = {"configurable": {"thread_id": thread}}
    calls = [
        {
            "name": "ask_clarification",
            "args": {"question": question, "options": ["x", "y"]},
            "id": call_id,
            "type": "tool_call",
        }
        for question, call_id in (("First?", "q1"), ("Second?", "q2"))
    ]
    await runtime.graph.aupdate_state(
        config, {"messages": [HumanMessage("choose"), AIMessage("", tool_calls=calls)]}, "model"
    )
    await runtime.graph.ainvoke(None, config)
    first = await runtime.pending_question(thread)
    assert first is not None

    after_one = await runtime.resume(thread, "x", CTX)
    assert after_one.question is not None
    assert after_one.question.question != first.question

    done = await runtime.resume(thread, "y", CTX)
    assert done.question is None and done.reply_text.startswith("You chose: ")
    stored = await runtime.messages(thread)
    _assert_every_call_answered_once(stored)
    answers = {m.tool_call_id: m.content for m in stored if isinstance(m, ToolMessage)}
    assert sorted(answers.values()) == ["x", "y"]
