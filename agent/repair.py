"""Keeping a thread's tool calls answered, so every model request is one providers accept.

OpenAI-compatible and Anthropic APIs reject a history in which an assistant tool call has no
result. Two situations leave such a call behind, and this middleware handles both before each
model call, without a graph node of its own (so a turn costs no extra checkpoint):

- A new message arrives while a clarification waits for its answer. LangGraph drops the pending
  interrupt when a run starts with new input, leaving `ask_clarification` unanswered and the new
  message after it. The message IS the answer: it is turned into the call's tool result, in the
  request and in the stored thread (the human message is replaced by the ToolMessage), which is
  exactly what resuming the interrupt with that text would have produced. Doing it here, in the
  run, spares every turn a checkpoint read up front just to look for a pending interrupt.
- A turn stopped by `/stop`, a timeout or a crash between a tool call and its result. The request
  (never the stored state) gets a short error result right after each unanswered call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolCall,
    ToolMessage,
)

from agent.reply import content_text, is_injected
from agent.tools import CLARIFICATION_TOOL

__all__ = [
    "INTERRUPTED_RESULT",
    "PendingAnswer",
    "ThreadRepairMiddleware",
    "answer_dangling_calls",
    "answer_pending_question",
]

INTERRUPTED_RESULT = "This tool call was interrupted before it returned a result."


@dataclass(frozen=True, slots=True)
class PendingAnswer:
    """A new message that answers a waiting call: the request to send and the state update."""

    messages: list[AnyMessage]
    update: list[BaseMessage]


def _result(call: ToolCall, content: str, *, failed: bool) -> ToolMessage:
    return ToolMessage(
        content=content,
        tool_call_id=call.get("id") or "",
        name=call.get("name", ""),
        status="error" if failed else "success",
    )


def answer_pending_question(
    messages: Sequence[AnyMessage], answering_tools: Collection[str] = (CLARIFICATION_TOOL,)
) -> PendingAnswer | None:
    """If the newest message follows an unanswered clarification call, make it the answer."""
    if not messages:
        return None
    last = messages[-1]
    if not isinstance(last, HumanMessage) or is_injected(last) or last.id is None:
        return None
    index = len(messages) - 2
    answered: set[str] = set()
    while index >= 0 and isinstance(result := messages[index], ToolMessage):
        answered.add(result.tool_call_id)
        index -= 1
    if index < 0 or not isinstance(asked := messages[index], AIMessage):
        return None
    open_calls = [c for c in asked.tool_calls if c.get("id") not in answered]
    target = next((c for c in open_calls if c.get("name") in answering_tools), None)
    if target is None:
        return None
    answer = content_text(last.content)
    results = [
        _result(c, answer, failed=False)
        if c is target
        else _result(c, INTERRUPTED_RESULT, failed=True)
        for c in open_calls
    ]
    return PendingAnswer(
        messages=[*messages[:-1], *results],
        update=[RemoveMessage(id=last.id), *results],
    )


def answer_dangling_calls(messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
    """The messages with an error result after each unanswered tool call; None if none is."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    if not any(
        call.get("id") not in answered
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
    ):
        return None
    repaired: list[AnyMessage] = []
    for message in messages:
        repaired.append(message)
        if isinstance(message, AIMessage):
            repaired.extend(
                _result(call, INTERRUPTED_RESULT, failed=True)
                for call in message.tool_calls
                if call.get("id") not in answered
            )
    return repaired


class ThreadRepairMiddleware(AgentMiddleware):
    def __init__(self, answering_tools: Collection[str] = (CLARIFICATION_TOOL,)) -> None:
        super().__init__()
        self._answering = frozenset(answering_tools)

    @property
    def name(self) -> str:
        return "thread_repair"

    def _prepare(
        self, request: ModelRequest[Any]
    ) -> tuple[ModelRequest[Any], PendingAnswer | None]:
        answer = answer_pending_question(request.messages, self._answering)
        messages = answer.messages if answer is not None else request.messages
        messages = answer_dangling_calls(messages) or messages
        if messages is not request.messages:
            request = request.override(messages=messages)
        return request, answer

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse],
    ) -> ModelResponse:
        request, answer = self._prepare(request)
        return _with_update(handler(request), answer)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        request, answer = self._prepare(request)
        return _with_update(await handler(request), answer)


def _with_update(response: ModelResponse, answer: PendingAnswer | None) -> ModelResponse:
    """Store the answer ahead of the model's reply (the model node applies it with add_messages)."""
    if answer is None:
        return response
    return ModelResponse(
        result=[*answer.update, *response.result],
        structured_response=response.structured_response,
    )
