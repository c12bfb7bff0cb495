"""Turning an `ask_clarification` interrupt into the `Question` a chat user sees.

The interrupt value is the dict the tool passed to `interrupt()`; it lives in the checkpoint, so a
question can be rebuilt from it in any process, also after a restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agent.result import Question

__all__ = ["DEFAULT_ICON", "ICONS", "format_question", "question_from_interrupt"]

ICONS: Mapping[str, str] = {
    "missing_info": "❓",
    "ambiguous_requirement": "🤔",
    "approach_choice": "🔀",
    "risk_confirmation": "⚠️",
    "suggestion": "💡",
}
DEFAULT_ICON = "❓"


def format_question(
    question: str,
    options: Iterable[str] = (),
    clarification_type: str = "",
    context: str = "",
) -> str:
    """Icon by type, then the context, then the question, then numbered options."""
    icon = ICONS.get(clarification_type, DEFAULT_ICON)
    context = context.strip()
    question = question.strip()
    lines = [f"{icon} {context}", "", question] if context else [f"{icon} {question}"]
    numbered = [f"{i}. {option}" for i, option in enumerate(options, 1)]
    if numbered:
        lines += ["", *numbered]
    return "\n".join(lines)


def question_from_interrupt(value: object) -> Question | None:
    """The `Question` behind an interrupt value; a bare string counts as a plain question."""
    if isinstance(value, str) and value.strip():
        return Question(text=value.strip(), question=value.strip())
    if not isinstance(value, Mapping):
        return None
    question = value.get("question")
    if not isinstance(question, str) or not question.strip():
        return None
    raw_options = value.get("options") or ()
    options = (
        tuple(str(o) for o in raw_options if str(o).strip())
        if isinstance(raw_options, list | tuple)
        else ()
    )
    kind = str(value.get("clarification_type") or "")
    context = str(value.get("context") or "")
    return Question(
        text=format_question(question, options, kind, context),
        question=question.strip(),
        options=options,
        clarification_type=kind,
        context=context.strip(),
    )
