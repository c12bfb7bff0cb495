"""`StreamedText` on the server's "messages-tuple" dicts (shapes as `langgraph dev` sends them)
and on message objects: only assistant text reaches `on_text`, each tool one status line."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessageChunk, ToolMessage

from agent.result import TurnContext
from agent.streamed_text import StreamedText


class Sinks:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.statuses: list[str] = []

    async def text(self, piece: str) -> None:
        self.texts.append(piece)

    async def status(self, line: str) -> None:
        self.statuses.append(line)

    def relay(self, *, with_status: bool = True) -> StreamedText:
        status = self.status if with_status else None
        return StreamedText(TurnContext(user_id="U1", on_text=self.text, on_status=status))


def _chunk(content: Any = "", **fields: Any) -> dict[str, Any]:
    return AIMessageChunk(content=content, id="lc_run--1", **fields).model_dump()


def _call_chunk(name: str | None, args: str) -> dict[str, Any]:
    call = {"name": name, "args": args, "id": "call_1", "index": 0, "type": "tool_call_chunk"}
    return _chunk(tool_call_chunks=[call])


MODEL = {"langgraph_node": "model"}


async def test_server_dicts_give_text_and_one_status_per_tool() -> None:
    sinks = Sinks()
    relay = sinks.relay()
    await relay.relay(_call_chunk("lookup", '{"query": "sec'), MODEL)
    await relay.relay(_call_chunk(None, 'ret"}'), MODEL)
    await relay.relay(_call_chunk("lookup", "{}"), MODEL)  # the same tool again: no new line
    await relay.relay(_chunk("Hello"), MODEL)
    await relay.relay(_chunk([{"type": "text", "text": " there"}]), MODEL)
    await relay.relay(_chunk(""), MODEL)
    assert sinks.statuses == ["Using lookup…"]
    assert sinks.texts == ["Hello", " there"]


async def test_tool_output_tools_node_text_and_non_messages_are_not_text() -> None:
    sinks = Sinks()
    relay = sinks.relay()
    tool = ToolMessage(content="tool output", tool_call_id="call_1", name="lookup").model_dump()
    await relay.relay(tool, MODEL)  # a tool message outside a node called "tools"
    await relay.relay(_chunk("inner model"), {"langgraph_node": "tools"})
    await relay.relay({"type": "human", "content": "user text"}, MODEL)
    await relay.relay({"type": "ai", "content": object()}, MODEL)  # not a valid message
    await relay.relay({"content": "no type"}, MODEL)
    assert sinks.texts == []
    assert sinks.statuses == []


async def test_a_whole_ai_message_dict_streams_as_one_piece() -> None:
    sinks = Sinks()
    whole = {"type": "ai", "content": "Echo graph heard: hi", "id": "m1", "tool_calls": []}
    await sinks.relay().relay(whole, {"langgraph_node": "respond"})
    assert sinks.texts == ["Echo graph heard: hi"]


async def test_clarification_is_never_announced_and_no_status_sink_is_fine() -> None:
    sinks = Sinks()
    await sinks.relay().relay(_call_chunk("ask_clarification", '{"question": "Which?"}'), MODEL)
    assert sinks.statuses == []
    quiet = Sinks()
    relay = quiet.relay(with_status=False)
    await relay.relay(_call_chunk("lookup", "{}"), MODEL)
    await relay.relay(_chunk("done"), MODEL)
    assert quiet.statuses == [] and quiet.texts == ["done"]


async def test_message_objects_are_relayed_like_their_dicts() -> None:
    sinks = Sinks()
    relay = sinks.relay()
    await relay.relay(AIMessageChunk(content="Hi", id="a"), MODEL)
    await relay.relay(ToolMessage(content="out", tool_call_id="c"), MODEL)
    assert sinks.texts == ["Hi"]
