"""The scripted demo model follows its documented rules exactly."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from agent.demo import GREETING, MAX_DEMO_CHARS, DemoChatModel

_MARKDOWN = re.compile(r"[*_`#\[\]<>|~]")


def _ask(*messages: BaseMessage) -> AIMessage:
    reply = DemoChatModel().invoke([SystemMessage("system"), *messages])
    assert isinstance(reply, AIMessage)
    return reply


async def _aask(*messages: BaseMessage) -> AIMessage:
    reply = await DemoChatModel().ainvoke([SystemMessage("system"), *messages])
    assert isinstance(reply, AIMessage)
    return reply


@pytest.mark.parametrize("text", ["hi", "Hello", "HEY!", " hello. ", "hi!!"])
def test_greetings_get_the_greeting(text: str) -> None:
    assert _ask(HumanMessage(text)).content == GREETING
    assert GREETING.startswith("Hello! I'm Switchboard's demo agent.")


def test_greeting_must_be_the_whole_message() -> None:
    assert _ask(HumanMessage("hi there")).content == "You said: hi there"


def test_echo_returns_the_rest_verbatim() -> None:
    assert _ask(HumanMessage("echo **bold** and `code`")).content == "**bold** and `code`"
    assert _ask(HumanMessage("ECHO Keep Case")).content == "Keep Case"


@pytest.mark.parametrize("length", [1, 7, 499, 500, 501, 1234, 5000])
def test_long_is_plain_prose_of_exactly_n_characters(length: int) -> None:
    text = str(_ask(HumanMessage(f"long {length}")).content)
    assert len(text) == length
    assert text == text.strip()
    assert not _MARKDOWN.search(text)
    if length > 1100:
        paragraphs = text.split("\n\n")
        assert len(paragraphs) >= 2
        assert all(len(p) < 700 for p in paragraphs)


def test_long_is_deterministic() -> None:
    assert _ask(HumanMessage("long 800")).content == _ask(HumanMessage("long 800")).content


def test_code_has_a_python_fence_between_two_sentences() -> None:
    text = str(_ask(HumanMessage("code 300")).content)
    before, fence, rest = text.partition("```python\n")
    assert fence and before.strip().endswith(":")
    body, closing, after = rest.partition("```")
    assert closing and after.strip().endswith(".")
    assert 250 <= len(body) <= 400


async def test_slow_waits_then_reports() -> None:
    reply = await _aask(HumanMessage("slow 0.01"))
    assert reply.content == "Done after 0.01 s."


def test_recall_quotes_the_first_human_message_of_the_thread() -> None:
    reply = _ask(
        HumanMessage("my name is Ada"),
        AIMessage("You said: my name is Ada"),
        HumanMessage("warning", name="loop_warning"),
        HumanMessage("recall"),
    )
    assert reply.content == "You first said: my name is Ada"


def test_time_calls_the_tool_then_reports_its_result() -> None:
    first = _ask(HumanMessage("What TIME is it?"))
    assert first.content == ""
    assert [c["name"] for c in first.tool_calls] == ["current_time"]
    call = first.tool_calls[0]
    second = _ask(
        HumanMessage("What TIME is it?"),
        first,
        ToolMessage("2026-01-01T12:00:00+00:00", tool_call_id=call["id"], name="current_time"),
    )
    assert second.content == "It is 2026-01-01T12:00:00+00:00."
    assert not second.tool_calls


def test_choose_asks_for_clarification_then_reports_the_answer() -> None:
    first = _ask(HumanMessage("choose one"))
    call = first.tool_calls[0]
    assert call["name"] == "ask_clarification"
    assert call["args"] == {
        "question": "Which one do you mean?",
        "options": ["alpha", "beta", "gamma"],
        "clarification_type": "approach_choice",
        "context": "I need one detail.",
    }
    second = _ask(
        HumanMessage("choose one"),
        first,
        ToolMessage("beta", tool_call_id=call["id"], name="ask_clarification"),
    )
    assert second.content == "You chose: beta."


def test_loop_calls_the_same_tool_n_times_then_finishes() -> None:
    history: list[BaseMessage] = [HumanMessage("loop 3")]
    calls = []
    for _ in range(3):
        reply = _ask(*history)
        assert len(reply.tool_calls) == 1
        call = reply.tool_calls[0]
        calls.append((call["name"], call["args"]))
        history += [reply, ToolMessage("now", tool_call_id=call["id"], name="current_time")]
    assert calls == [("current_time", {})] * 3
    assert _ask(*history).content == "Loop finished."


def test_tool_call_ids_are_unique_within_a_thread() -> None:
    history: list[BaseMessage] = [HumanMessage("loop 4")]
    ids = set()
    for _ in range(4):
        reply = _ask(*history)
        ids.add(reply.tool_calls[0]["id"])
        history += [reply, ToolMessage("now", tool_call_id=reply.tool_calls[0]["id"])]
    assert len(ids) == 4


def test_boom_raises() -> None:
    with pytest.raises(RuntimeError):
        _ask(HumanMessage("boom"))


def test_anything_else_is_echoed_with_a_prefix() -> None:
    assert _ask(HumanMessage("  tell me more  ")).content == "You said: tell me more"


def test_injected_messages_are_not_the_turn_text() -> None:
    reply = _ask(HumanMessage("echo real"), HumanMessage("stop looping", name="loop_warning"))
    assert reply.content == "real"


def test_bind_tools_keeps_the_model_usable() -> None:
    model = DemoChatModel()
    bound = model.bind_tools([])
    assert bound.invoke([HumanMessage("hi")]).content == GREETING


@pytest.mark.parametrize("request_text", ["long 20000000", "code 20000000", "slow 100000"])
def test_huge_sizes_and_delays_are_refused_in_one_line(request_text: str) -> None:
    text = str(_ask(HumanMessage(request_text)).content)
    assert text.startswith("The demo") and "at most" in text and len(text) < 100


def test_the_largest_allowed_size_is_served() -> None:
    assert len(str(_ask(HumanMessage(f"long {MAX_DEMO_CHARS}")).content)) == MAX_DEMO_CHARS


def test_summarise_names_who_said_what_in_the_quoted_conversation_before_the_message() -> None:
    from agent.quoted import context_message
    from switchboard.conversation import ContextMessage

    (block,) = context_message(
        [
            ContextMessage(
                "1", "Ann", 1_700_000_000.0, "Should we ship the release on Friday or wait?"
            ),
            ContextMessage("2", "Bob", 0.0, "Monday.\nQA needs time.", replied_to=True),
        ]
    )
    assert _ask(block, HumanMessage("summarise?")).content == (
        "Earlier here: Ann: Should we ship the release on Friday or; Bob: Monday."
    )
    assert _ask(HumanMessage("what did I miss")).content == "I see no earlier messages here."


def _summary_request(*said: str) -> HumanMessage:
    from agent.history_window import SUMMARY_PROMPT

    body = "\n".join(f'<message type="human">{text}</message>' for text in said)
    return HumanMessage(SUMMARY_PROMPT.format(messages=body))


def test_a_summary_request_is_answered_with_a_bounded_summary_that_carries_the_beginning() -> None:
    first = _ask(_summary_request("my name is Ada &amp; I plan a trip", "time to book", "choose"))
    assert first.content == (
        "Summary of 3 earlier messages.\nIt began with: my name is Ada & I plan a trip\n"
        "Lately: my name is Ada & I plan a; time to book; choose"
    )
    again = _ask(
        _summary_request(str(first.content), *(f"echo {n} " + "word " * 30 for n in range(9)))
    )
    lines = str(again.content).splitlines()
    assert lines[:2] == [
        "Summary of 12 earlier messages.",
        "It began with: my name is Ada & I plan a trip",
    ]
    recent = lines[2].removeprefix("Lately: ").split("; ")
    assert [r.split()[:2] for r in recent] == [["echo", "6"], ["echo", "7"], ["echo", "8"]]
    assert all(len(r.split()) == 8 for r in recent) and len(lines) == 3


def test_recall_after_a_summary_names_what_the_conversation_began_with() -> None:
    summary = HumanMessage(
        "Here is a summary of the conversation to date:\n\nSummary of 4 earlier messages.\n"
        "It began with: my name is Ada\nLately: hello",
        additional_kwargs={"lc_source": "summarization"},
    )
    assert _ask(summary, HumanMessage("recall")).content == "You first said: my name is Ada"
