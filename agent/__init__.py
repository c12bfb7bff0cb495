"""The LangGraph agent: model, tools, clarification, loop detection, reply extraction."""

from agent.clarification import format_question, question_from_interrupt
from agent.demo import DemoChatModel
from agent.graph import AgentRuntime
from agent.loop_detection import LoopDetectionMiddleware, LoopDetector, LoopPolicy
from agent.model import build_model
from agent.reply import extract_reply
from agent.result import ModelCall, Question, TurnContext, TurnResult, TurnUsage
from agent.tools import ask_clarification, builtin_tools, current_time
from agent.tracing import (
    TracingConfig,
    run_metadata,
    spans_inline_when_untraced,
    tracing_from_env,
)
from agent.usage import ModelPrice, UsageMeter

__all__ = [
    "AgentRuntime",
    "DemoChatModel",
    "LoopDetectionMiddleware",
    "LoopDetector",
    "LoopPolicy",
    "ModelCall",
    "ModelPrice",
    "Question",
    "TracingConfig",
    "TurnContext",
    "TurnResult",
    "TurnUsage",
    "UsageMeter",
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
