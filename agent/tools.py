"""The built-in tools every agent gets: `current_time` and `ask_clarification`.

Each tool has a sync and an async body. The agent runs under `ainvoke`, where an async body avoids
a thread hop per call; the sync body keeps the graph usable under `invoke` too.

`ask_clarification` pauses the run with LangGraph `interrupt()`. The pause is stored in the
checkpoint, so the answer may arrive in another process after a restart: resuming with
`Command(resume=answer)` re-enters the same tool call, `interrupt()` returns the answer, and the
model sees it as the tool result.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import interrupt

__all__ = [
    "CLARIFICATION_TOOL",
    "TIME_TOOL",
    "ask_clarification",
    "builtin_tools",
    "current_time",
]

CLARIFICATION_TOOL = "ask_clarification"
TIME_TOOL = "current_time"

_TIME_DESCRIPTION = "Return the current date and time in UTC (ISO 8601)."
_CLARIFICATION_DESCRIPTION = (
    "Ask the user a question and wait for the answer before continuing. Use it when a detail is "
    "missing, the request is ambiguous, you need the user to pick an approach, or before a risky "
    "step. `options` are short choices the user can pick from; `clarification_type` is one of "
    "missing_info, ambiguous_requirement, approach_choice, risk_confirmation, suggestion; "
    "`context` says briefly why you ask. The tool result is the user's answer."
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _current_time_sync() -> str:
    return _now()


async def _current_time_async() -> str:
    return _now()


def _clarify(
    question: str,
    options: list[str] | None = None,
    clarification_type: str = "",
    context: str = "",
) -> str:
    answer: Any = interrupt(
        {
            "question": question,
            "options": [str(o) for o in options or ()],
            "clarification_type": clarification_type,
            "context": context,
        }
    )
    return answer if isinstance(answer, str) else str(answer)


async def _clarify_async(
    question: str,
    options: list[str] | None = None,
    clarification_type: str = "",
    context: str = "",
) -> str:
    return _clarify(question, options, clarification_type, context)


current_time: BaseTool = StructuredTool.from_function(
    func=_current_time_sync,
    coroutine=_current_time_async,
    name=TIME_TOOL,
    description=_TIME_DESCRIPTION,
)

ask_clarification: BaseTool = StructuredTool.from_function(
    func=_clarify,
    coroutine=_clarify_async,
    name=CLARIFICATION_TOOL,
    description=_CLARIFICATION_DESCRIPTION,
)


def builtin_tools() -> tuple[BaseTool, ...]:
    return (ask_clarification, current_time)
