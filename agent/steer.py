"""Steering: messages a user sends while their turn runs join that run before its next model call.

The manager puts a `SteerSource` in the run's config (`TurnContext.steer`); before each model
call the agent asks it for what arrived meanwhile and appends each message as a user message, so
the answer takes a correction ("actually, for Berlin") into account instead of finishing an
answer the user already knows is wrong. A tool call already running finishes first.

Two ways in, one logic (`take_steered`):
- the built-in agent folds it into its one model-call middleware (`agent.middleware`): the
  messages go into the request and, ahead of the model's answer, into the state, with no graph
  node of their own (a node costs a step per model call);
- your own `create_agent` graph adds `SteerMiddleware()` to its middleware: a `before_model` hook,
  whose node also tells the custom backend that the graph steers (`graph_steers`).

A source that fails only means the message is not steered: it stays queued and runs as the next
turn, so a failure here is logged and never fails the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import structlog
from langchain.agents.middleware import AgentMiddleware, ModelCallResult, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.config import get_config

from agent.result import SteerSource

__all__ = [
    "STEER_KEY",
    "SteerMiddleware",
    "graph_steers",
    "steer_source",
    "take_steered",
    "with_ahead",
]

_log = structlog.get_logger(__name__)

STEER_KEY = "switchboard_steer"  # `configurable` key of the run's SteerSource
_NAME = "switchboard_steer"

_R = TypeVar("_R")  # a model response's structured output


def steer_source() -> SteerSource | None:
    """The running turn's source, from its config; None outside a steered run."""
    try:
        config = get_config()
    except RuntimeError:  # not inside a runnable
        return None
    source = (config.get("configurable") or {}).get(STEER_KEY)
    return source if callable(source) else None


async def take_steered() -> list[HumanMessage]:
    """What arrived for this run since the last model call, as user messages."""
    source = steer_source()
    if source is None:
        return []
    try:
        texts: Sequence[str] = await source()
    except Exception as exc:  # the message stays queued: the next turn answers it
        _log.warning("steer.take_failed", error=type(exc).__name__)
        return []
    return [HumanMessage(content=text) for text in texts if text]


def with_ahead(
    response: ModelCallResult[_R], messages: Sequence[BaseMessage]
) -> ModelCallResult[_R]:
    """The model call's result with `messages` ahead of the model's answer, so the state keeps
    them in the order the model saw them (steered messages, rewrites of the thread)."""
    if not messages:
        return response
    if isinstance(response, AIMessage):
        return ModelResponse(result=[*messages, response])
    if isinstance(response, ExtendedModelResponse):
        inner = _ahead(response.model_response, messages)
        return ExtendedModelResponse(model_response=inner, command=response.command)
    return _ahead(response, messages)


def _ahead(response: ModelResponse[_R], messages: Sequence[BaseMessage]) -> ModelResponse[_R]:
    return ModelResponse(
        result=[*messages, *response.result], structured_response=response.structured_response
    )


class SteerMiddleware(AgentMiddleware):
    """For your own `create_agent` graph: `middleware=[SteerMiddleware(), ...]`."""

    @property
    def name(self) -> str:
        return _NAME

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        steered = await take_steered()
        return {"messages": steered} if steered else None


def graph_steers(graph: Any) -> bool:
    """Whether a compiled graph takes steered messages (it has `SteerMiddleware`'s node)."""
    nodes = getattr(graph, "nodes", None) or {}
    return f"{_NAME}.before_model" in nodes
