"""Reply extraction: only this turn's assistant prose, or the waiting question, or nothing."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from agent.clarification import format_question
from agent.reply import extract_reply, last_human_text
from agent.result import Question


def _call(name: str = "current_time", call_id: str = "c1") -> dict[str, object]:
    return {"name": name, "args": {}, "id": call_id, "type": "tool_call"}


def test_returns_the_newest_assistant_text_of_the_turn() -> None:
    messages = [
        SystemMessage("be nice"),
        HumanMessage("what time is it"),
        AIMessage("", tool_calls=[_call()]),
        ToolMessage("2026-01-01T00:00:00+00:00", tool_call_id="c1", name="current_time"),
        AIMessage("It is midnight."),
    ]
    assert extract_reply(messages) == "It is midnight."


def test_earlier_turn_text_never_leaks_when_this_turn_has_none() -> None:
    messages = [
        HumanMessage("hi"),
        AIMessage("Hello from the first turn."),
        HumanMessage("what time is it"),
        AIMessage("", tool_calls=[_call()]),
        ToolMessage("noon", tool_call_id="c1", name="current_time"),
    ]
    assert extract_reply(messages) == ""


def test_list_content_text_blocks_are_joined() -> None:
    messages = [
        HumanMessage("tell me"),
        AIMessage(
            content=[
                {"type": "text", "text": "First part, "},
                {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
                {"type": "text", "text": "second part."},
            ]
        ),
    ]
    assert extract_reply(messages) == "First part, second part."


def test_empty_ai_message_is_skipped_for_an_earlier_one_of_the_same_turn() -> None:
    messages = [
        HumanMessage("go"),
        AIMessage("Working on it."),
        AIMessage(""),
        AIMessage(content=[]),
    ]
    assert extract_reply(messages) == "Working on it."


def test_a_waiting_clarification_is_preferred_over_any_text() -> None:
    text = format_question("Which one?", ["a", "b"], "approach_choice", "I need one detail.")
    question = Question(text=text, question="Which one?", options=("a", "b"))
    messages = [HumanMessage("choose"), AIMessage("Let me ask.", tool_calls=[_call()])]
    assert extract_reply(messages, question) == text


def test_reasoning_and_thinking_blocks_are_dropped() -> None:
    messages = [
        HumanMessage("think"),
        AIMessage(
            content=[
                {"type": "thinking", "thinking": "secret plan", "signature": "x"},
                {"type": "reasoning", "reasoning": "more secrets"},
                {"type": "text", "text": "The answer is 4."},
            ]
        ),
    ]
    assert extract_reply(messages) == "The answer is 4."


def test_inline_think_sections_are_dropped() -> None:
    messages = [HumanMessage("q"), AIMessage("<think>hmm, let me see</think>\nThe answer is 4.")]
    assert extract_reply(messages) == "The answer is 4."


def test_tool_results_and_human_text_are_never_returned() -> None:
    messages = [
        HumanMessage("what time is it"),
        AIMessage("", tool_calls=[_call()]),
        ToolMessage("tool output", tool_call_id="c1", name="current_time"),
    ]
    assert extract_reply(messages) == ""


def test_injected_loop_warning_is_not_a_turn_boundary() -> None:
    messages = [
        HumanMessage("loop 9"),
        AIMessage("Still looking."),
        AIMessage("", tool_calls=[_call()]),
        ToolMessage("noon", tool_call_id="c1", name="current_time"),
        HumanMessage("You keep repeating yourself.", name="loop_warning"),
        AIMessage(""),
    ]
    assert extract_reply(messages) == "Still looking."
    assert last_human_text(messages) == "loop 9"


def test_nothing_at_all_gives_empty_text() -> None:
    assert extract_reply([]) == ""
    assert extract_reply([HumanMessage("hello")]) == ""
