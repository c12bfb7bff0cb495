"""Clarification questions: formatted text (icon, context, question, numbered options)."""

from __future__ import annotations

import pytest

from agent.clarification import format_question, question_from_interrupt


@pytest.mark.parametrize(
    ("kind", "icon"),
    [
        ("missing_info", "❓"),
        ("ambiguous_requirement", "🤔"),
        ("approach_choice", "🔀"),
        ("risk_confirmation", "⚠️"),
        ("suggestion", "💡"),
        ("", "❓"),
        ("something_else", "❓"),
    ],
)
def test_icon_follows_the_clarification_type(kind: str, icon: str) -> None:
    assert format_question("Which?", (), kind).startswith(f"{icon} Which?")


def test_context_comes_first_then_question_then_numbered_options() -> None:
    text = format_question(
        "Which one do you mean?",
        ["alpha", "beta", "gamma"],
        "approach_choice",
        "I need one detail.",
    )
    assert text == (
        "🔀 I need one detail.\n\nWhich one do you mean?\n\n1. alpha\n2. beta\n3. gamma"
    )


def test_question_without_context_or_options_is_one_line() -> None:
    assert format_question("Are you sure?", (), "risk_confirmation") == "⚠️ Are you sure?"


def test_interrupt_value_becomes_a_question() -> None:
    question = question_from_interrupt(
        {
            "question": "Which one do you mean?",
            "options": ["alpha", "beta"],
            "clarification_type": "approach_choice",
            "context": "I need one detail.",
        }
    )
    assert question is not None
    assert question.question == "Which one do you mean?"
    assert question.options == ("alpha", "beta")
    assert question.clarification_type == "approach_choice"
    assert question.text.startswith("🔀 I need one detail.")


def test_non_clarification_interrupt_values_are_not_questions() -> None:
    assert question_from_interrupt({"action": "approve"}) is None
    assert question_from_interrupt(None) is None
    assert question_from_interrupt({"question": "  "}) is None


def test_plain_string_interrupt_is_a_bare_question() -> None:
    question = question_from_interrupt("Continue?")
    assert question is not None
    assert question.text == "Continue?"
    assert question.options == ()
