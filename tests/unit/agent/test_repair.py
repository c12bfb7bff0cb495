"""Thread repair: a new message answers a waiting clarification; other open calls get results."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from agent.repair import (
    INTERRUPTED_RESULT,
    answer_dangling_calls,
    answer_pending_question,
)


def _call(name: str, call_id: str) -> dict[str, object]:
    return {"name": name, "args": {}, "id": call_id, "type": "tool_call"}


def test_new_message_after_waiting_clarification_becomes_its_answer() -> None:
    asked = AIMessage("", tool_calls=[_call("ask_clarification", "q1")], id="a1")
    new = HumanMessage("beta", id="h2")
    answer = answer_pending_question([HumanMessage("choose", id="h1"), asked, new])
    assert answer is not None
    *kept, result = answer.messages
    assert kept[-1] is asked
    assert isinstance(result, ToolMessage)
    assert (result.content, result.tool_call_id, result.name) == ("beta", "q1", "ask_clarification")
    removal, stored = answer.update
    assert isinstance(removal, RemoveMessage) and removal.id == "h2"
    assert stored is result


def test_sibling_calls_left_open_get_an_error_result() -> None:
    asked = AIMessage(
        "", tool_calls=[_call("current_time", "t1"), _call("ask_clarification", "q1")], id="a1"
    )
    answer = answer_pending_question(
        [HumanMessage("x", id="h1"), asked, HumanMessage("b", id="h2")]
    )
    assert answer is not None
    results = [m for m in answer.messages if isinstance(m, ToolMessage)]
    assert [(r.tool_call_id, r.content, r.status) for r in results] == [
        ("t1", INTERRUPTED_RESULT, "error"),
        ("q1", "b", "success"),
    ]


def test_no_answer_when_the_open_call_is_not_a_clarification() -> None:
    messages = [
        HumanMessage("time", id="h1"),
        AIMessage("", tool_calls=[_call("current_time", "t1")], id="a1"),
        HumanMessage("next", id="h2"),
    ]
    assert answer_pending_question(messages) is None


def test_no_answer_when_the_clarification_was_already_answered() -> None:
    messages = [
        HumanMessage("choose", id="h1"),
        AIMessage("", tool_calls=[_call("ask_clarification", "q1")], id="a1"),
        ToolMessage("beta", tool_call_id="q1", id="t1"),
        AIMessage("You chose: beta.", id="a2"),
        HumanMessage("next", id="h2"),
    ]
    assert answer_pending_question(messages) is None


def test_injected_messages_never_answer_a_question() -> None:
    messages = [
        HumanMessage("choose", id="h1"),
        AIMessage("", tool_calls=[_call("ask_clarification", "q1")], id="a1"),
        HumanMessage("stop looping", name="loop_warning", id="w1"),
    ]
    assert answer_pending_question(messages) is None


def test_dangling_calls_get_an_error_result_right_after_their_message() -> None:
    messages = [
        HumanMessage("time"),
        AIMessage("", tool_calls=[_call("current_time", "t1"), _call("current_time", "t2")]),
        ToolMessage("noon", tool_call_id="t2"),
        HumanMessage("hello again"),
    ]
    repaired = answer_dangling_calls(messages)
    assert repaired is not None
    assert [type(m).__name__ for m in repaired] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    assert repaired[2].tool_call_id == "t1" and repaired[2].content == INTERRUPTED_RESULT


def test_complete_history_needs_no_repair() -> None:
    messages = [
        HumanMessage("time"),
        AIMessage("", tool_calls=[_call("current_time", "t1")]),
        ToolMessage("noon", tool_call_id="t1"),
        AIMessage("It is noon."),
    ]
    assert answer_dangling_calls(messages) is None
