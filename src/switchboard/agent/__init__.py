"""The LangGraph agent: model, tools, clarification, loop detection, reply extraction."""

from switchboard.agent.clarification import format_question, question_from_interrupt
from switchboard.agent.demo import DemoChatModel
from switchboard.agent.graph import AgentRuntime
from switchboard.agent.loop_detection import LoopDetectionMiddleware, LoopDetector, LoopPolicy
from switchboard.agent.model import build_model
from switchboard.agent.reply import extract_reply
from switchboard.agent.result import Question, TurnContext, TurnResult
from switchboard.agent.tools import ask_clarification, builtin_tools, current_time
from switchboard.agent.tracing import (
    TracingConfig,
    run_metadata,
    spans_inline_when_untraced,
    tracing_from_env,
)

__all__ = [
    "AgentRuntime",
    "DemoChatModel",
    "LoopDetectionMiddleware",
    "LoopDetector",
    "LoopPolicy",
    "Question",
    "TracingConfig",
    "TurnContext",
    "TurnResult",
    "ask_clarification",
    "build_model",
    "builtin_tools",
    "current_time",
    "extract_reply",
    "format_question",
    "question_from_interrupt",
    "run_metadata",
    "spans_inline_when_untraced",
    "tracing_from_env",
]
