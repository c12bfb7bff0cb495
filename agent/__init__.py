"""The LangGraph agent: backends, model, tools (built-in and MCP), clarification, loop detection,
reply extraction."""

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
