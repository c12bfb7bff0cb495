"""The LangGraph agent: backends, model, tools (built-in and MCP), clarification, loop detection,
reply extraction.

The names below load on first use (PEP 562): the command line's admin commands and the
channel layer import `agent.result` without paying for LangChain, LangGraph and the model SDKs
(about 2.5 s of start-up).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.backends import (
        AgentBackend,
        AgentSpec,
        BuiltinAgent,
        LocalGraphRunner,
        RemoteGraphRunner,
        build_agent_backend,
        parse_agent_spec,
    )
    from agent.clarification import format_question, question_from_interrupt
    from agent.demo import DemoChatModel
    from agent.graph import AgentRuntime
    from agent.loop_detection import LoopDetectionMiddleware, LoopDetector, LoopPolicy
    from agent.mcp import McpConfigFile, McpServerStatus, load_mcp_tools
    from agent.mcp_config import (
        UpdateRefused,
        load_mcp_config,
        merge_config,
        merge_http_update,
        validate_config,
    )
    from agent.model import build_model
    from agent.reply import extract_reply
    from agent.result import ModelCall, Question, TurnContext, TurnResult, TurnUsage
    from agent.run_feedback import LangSmithVotes, langsmith_votes
    from agent.sandbox import prepare_files_dir
    from agent.tools import ask_clarification, builtin_tools, current_time
    from agent.tracing import (
        TracingConfig,
        run_metadata,
        spans_inline_when_untraced,
        tracing_from_env,
    )
    from agent.transcription import build_transcriber
    from agent.usage import ModelPrice, UsageMeter

_HOME: dict[str, str] = {
    "AgentBackend": "agent.backends",
    "AgentRuntime": "agent.graph",
    "AgentSpec": "agent.backends",
    "BuiltinAgent": "agent.backends",
    "DemoChatModel": "agent.demo",
    "LangSmithVotes": "agent.run_feedback",
    "LocalGraphRunner": "agent.backends",
    "LoopDetectionMiddleware": "agent.loop_detection",
    "LoopDetector": "agent.loop_detection",
    "LoopPolicy": "agent.loop_detection",
    "McpConfigFile": "agent.mcp",
    "McpServerStatus": "agent.mcp",
    "ModelCall": "agent.result",
    "ModelPrice": "agent.usage",
    "Question": "agent.result",
    "RemoteGraphRunner": "agent.backends",
    "TracingConfig": "agent.tracing",
    "TurnContext": "agent.result",
    "TurnResult": "agent.result",
    "TurnUsage": "agent.result",
    "UpdateRefused": "agent.mcp_config",
    "UsageMeter": "agent.usage",
    "ask_clarification": "agent.tools",
    "build_agent_backend": "agent.backends",
    "build_model": "agent.model",
    "build_transcriber": "agent.transcription",
    "builtin_tools": "agent.tools",
    "current_time": "agent.tools",
    "extract_reply": "agent.reply",
    "format_question": "agent.clarification",
    "langsmith_votes": "agent.run_feedback",
    "load_mcp_config": "agent.mcp_config",
    "load_mcp_tools": "agent.mcp",
    "merge_config": "agent.mcp_config",
    "merge_http_update": "agent.mcp_config",
    "parse_agent_spec": "agent.backends",
    "prepare_files_dir": "agent.sandbox",
    "question_from_interrupt": "agent.clarification",
    "run_metadata": "agent.tracing",
    "spans_inline_when_untraced": "agent.tracing",
    "tracing_from_env": "agent.tracing",
    "validate_config": "agent.mcp_config",
}

__all__ = [
    "AgentBackend",
    "AgentRuntime",
    "AgentSpec",
    "BuiltinAgent",
    "DemoChatModel",
    "LangSmithVotes",
    "LocalGraphRunner",
    "LoopDetectionMiddleware",
    "LoopDetector",
    "LoopPolicy",
    "McpConfigFile",
    "McpServerStatus",
    "ModelCall",
    "ModelPrice",
    "Question",
    "RemoteGraphRunner",
    "TracingConfig",
    "TurnContext",
    "TurnResult",
    "TurnUsage",
    "UpdateRefused",
    "UsageMeter",
    "ask_clarification",
    "build_agent_backend",
    "build_model",
    "build_transcriber",
    "builtin_tools",
    "current_time",
    "extract_reply",
    "format_question",
    "langsmith_votes",
    "load_mcp_config",
    "load_mcp_tools",
    "merge_config",
    "merge_http_update",
    "parse_agent_spec",
    "prepare_files_dir",
    "question_from_interrupt",
    "run_metadata",
    "spans_inline_when_untraced",
    "tracing_from_env",
    "validate_config",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
