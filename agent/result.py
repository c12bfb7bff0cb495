"""What one agent turn takes and gives back: plain data at the agent/channels boundary."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Question", "TurnContext", "TurnResult"]


@dataclass(frozen=True, slots=True)
class TurnContext:
    """Who is talking and from where; becomes run metadata (tracing) and tool context."""

    user_id: str
    user_name: str = ""
    platform: str = ""
    conversation_key: str = ""
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Question:
    """A clarification the agent is waiting on (an `ask_clarification` interrupt)."""

    text: str  # formatted: icon by type, context, question, numbered options
    question: str  # the bare question
    options: tuple[str, ...] = ()
    clarification_type: str = ""
    context: str = ""


@dataclass(frozen=True, slots=True)
class TurnResult:
    reply_text: str  # clean assistant text of this turn only ("" when there is none)
    run_id: str
    question: Question | None = None
