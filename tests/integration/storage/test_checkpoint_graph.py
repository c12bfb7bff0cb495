"""Real graphs on RedisCheckpointSaver behave exactly as on InMemorySaver: history, interrupts
and resumes, subgraph namespaces."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import redis.asyncio as aioredis
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from storage import RedisCheckpointSaver

__all__: list[str] = []


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]


def _graph(checkpointer: Any) -> Any:
    def inner(state: _State) -> dict[str, Any]:
        return {"log": ["inner"]}

    sub = StateGraph(_State)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")

    def ask(state: _State) -> dict[str, Any]:
        answer = interrupt({"question": "which one?"})
        return {"messages": [AIMessage(f"you chose {answer}")], "log": ["ask"]}

    builder = StateGraph(_State)
    builder.add_node("sub", sub.compile())
    builder.add_node("ask", ask)
    builder.add_edge(START, "sub")
    builder.add_edge("sub", "ask")
    return builder.compile(checkpointer=checkpointer)


async def _run(checkpointer: Any) -> list[Any]:
    graph = _graph(checkpointer)
    config = {"configurable": {"thread_id": "g1"}}
    await graph.ainvoke({"messages": [("user", "start")], "log": []}, config)
    paused = await graph.aget_state(config, subgraphs=True)
    await graph.ainvoke(Command(resume="beta"), config)
    await graph.ainvoke({"messages": [("user", "again")], "log": []}, config)
    history = [
        (
            [(m.type, m.content) for m in snap.values.get("messages", [])],
            snap.values.get("log"),
            snap.next,
            snap.metadata["source"],
            snap.metadata["step"],
            [i.value for t in snap.tasks for i in t.interrupts],
        )
        async for snap in graph.aget_state_history(config)
    ]
    return [history, paused.next, [i.value for i in paused.interrupts]]


async def test_graph_history_matches_in_memory_saver(redis: aioredis.Redis, prefix: str) -> None:
    ours = await _run(RedisCheckpointSaver(redis, prefix=prefix))
    reference = await _run(InMemorySaver())

    assert ours == reference
    assert ours[1] == ("ask",)
    assert ours[2] == [{"question": "which one?"}]
    final_messages = ours[0][0][0]
    assert ("ai", "you chose beta") in final_messages
