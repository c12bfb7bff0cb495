"""A small LangGraph graph to plug into Switchboard: `SWITCHBOARD_AGENT=python:examples.echo_graph:graph`.

It calls no model, so it runs offline; replace `respond` with your own nodes (a model call, tools,
subgraphs). What Switchboard needs from a graph:

- its state has `messages` (here `MessagesState`): each chat turn adds one `HumanMessage`, and the
  reply is the assistant text this turn added;
- to ask the person something, call `interrupt({"question": str, "options": [str]})` in a node
  (or use the built-in `ask_clarification` tool in a tool node); the answer, typed or picked
  with a button, is what `interrupt()` returns;
- compile it WITHOUT a checkpointer: Switchboard adds its Redis saver (so history survives
  restarts); `langgraph dev` / a LangGraph server adds its own in the same way.

The same file is served by `langgraph dev` (see `langgraph.json` beside it) for
`SWITCHBOARD_AGENT=http://127.0.0.1:2024`.

What it does: `choose …` asks which of alpha/beta/gamma; `slow N` waits N seconds (try `/stop`);
`recall` quotes the first thing said in the conversation; anything else is echoed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

__all__ = ["graph", "make_graph"]


def _text(message: AnyMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content.strip()
    return "".join(b.get("text", "") for b in content if isinstance(b, dict)).strip()


async def respond(state: MessagesState) -> dict[str, list[AIMessage]]:
    humans = [m for m in state["messages"] if isinstance(m, HumanMessage)]
    said = _text(humans[-1]) if humans else ""
    low = said.lower()
    if low.startswith("choose"):
        answer = interrupt(
            {"question": "Which one do you mean?", "options": ["alpha", "beta", "gamma"]}
        )
        return {"messages": [AIMessage(content=f"You chose: {answer}.")]}
    if low.startswith("slow "):
        seconds = min(float(low.split()[1]), 60.0)
        await asyncio.sleep(seconds)
        return {"messages": [AIMessage(content=f"Done after {seconds:g} s.")]}
    if low == "recall":
        return {"messages": [AIMessage(content=f"You first said: {_text(humans[0])}")]}
    return {"messages": [AIMessage(content=f"Echo graph heard: {said}")]}


def make_graph() -> Any:
    """A zero-argument factory: `SWITCHBOARD_AGENT=python:examples.echo_graph:make_graph`."""
    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile()


graph = make_graph()
