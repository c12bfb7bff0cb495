"""Agent backends: the built-in agent, your own LangGraph graph, a remote LangGraph server.

`SWITCHBOARD_AGENT` picks one (`spec.py`); `factory.build_agent_backend` builds it; every backend
satisfies `AgentBackend` (the manager's `TurnRunner` plus `pending_question`, `tool_names`).
"""

from agent.backends.base import AgentBackend
from agent.backends.builtin import BuiltinAgent, build_builtin_graph
from agent.backends.custom import LoopGuard, load_graph, loop_guard
from agent.backends.factory import build_agent_backend
from agent.backends.local import LocalGraphRunner, LoopStopped, first_question
from agent.backends.policy import AgentPolicy, AgentRefused
from agent.backends.probe import probe_graph
from agent.backends.registry import AgentRegistry, describe_choice
from agent.backends.remote import CANCEL_TIMEOUT_S, RemoteGraphRunner
from agent.backends.spec import AgentSpec, parse_agent_spec

__all__ = [
    "CANCEL_TIMEOUT_S",
    "AgentBackend",
    "AgentPolicy",
    "AgentRefused",
    "AgentRegistry",
    "AgentSpec",
    "BuiltinAgent",
    "LocalGraphRunner",
    "LoopGuard",
    "LoopStopped",
    "RemoteGraphRunner",
    "build_agent_backend",
    "build_builtin_graph",
    "describe_choice",
    "first_question",
    "load_graph",
    "loop_guard",
    "parse_agent_spec",
    "probe_graph",
]
