"""What of LangGraph's token stream reaches `TurnContext.on_text` and `on_status`.

Both backends stream the same `(message, metadata)` pairs: the local runner as message objects
(`astream(stream_mode="messages")`), the remote one as their JSON form (a server's
"messages-tuple" stream). One filter for both, so a reply streams alike wherever the graph runs:
only assistant text is forwarded (never tool-call arguments, tool output, or text written inside
the `tools` node), and each tool the model starts is announced once ("Using <tool>…"), except
`ask_clarification`, whose question is sent whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage

from agent.result import TurnContext
from agent.tools import CLARIFICATION_TOOL

__all__ = ["StreamedText"]

_TOOLS_NODE = "tools"  # create_agent's tool node: a tool's own model calls are not the reply
_AI_TYPES: dict[str, type[AIMessage]] = {"AIMessageChunk": AIMessageChunk, "ai": AIMessage}


class StreamedText:
    """One run's relay from stream pairs to the context's sinks; build one per run."""

    def __init__(self, context: TurnContext) -> None:
        self._context = context
        self._announced: set[str] = set()

    async def relay(
        self, message: BaseMessage | Mapping[str, Any], metadata: Mapping[str, Any] | None
    ) -> None:
        """Hand one streamed message (object or server dict) to the sinks, if it is the reply's."""
        if (metadata or {}).get("langgraph_node") == _TOOLS_NODE:
            return
        chunk = _assistant(message)
        if chunk is None:
            return
        for call in getattr(chunk, "tool_call_chunks", None) or chunk.tool_calls or ():
            await self._announce(call.get("name"))
        text = chunk.text if isinstance(chunk.content, str | list) else ""
        if text and self._context.on_text is not None:
            await self._context.on_text(text)

    async def _announce(self, name: str | None) -> None:
        on_status = self._context.on_status
        if on_status is None or not name or name == CLARIFICATION_TOOL:
            return
        if name not in self._announced:
            self._announced.add(name)
            await on_status(f"Using {name}…")


def _assistant(message: BaseMessage | Mapping[str, Any]) -> AIMessage | None:
    """The message as an AI message, or None (tool output, human text, or not a message)."""
    if isinstance(message, AIMessage):  # AIMessageChunk included
        return message
    if not isinstance(message, Mapping):
        return None
    kind = _AI_TYPES.get(str(message.get("type")))
    if kind is None:
        return None
    try:
        return kind(**message)
    except (TypeError, ValueError):  # not a message after all: streaming is best effort
        return None
