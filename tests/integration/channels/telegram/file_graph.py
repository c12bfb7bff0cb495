"""A graph that hands the user files through its `files` state key, for the tests of files that
are refused when they are read for sending: `attach A B …` answers "Here you are." with a
reference to each path inside the outbound-file directory (read only at send time, as a
`send_file(path=…)` artifact is), and `inline NAME` with NAME's bytes in the entry itself.

`SWITCHBOARD_AGENT=python:tests.integration.channels.telegram.file_graph:graph`.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from agent.attachments import file_entry, file_reference

__all__ = ["INLINE_TEXT", "REPLY", "graph"]

REPLY = "Here you are."
INLINE_TEXT = b"notes written by the graph\n"


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    files: list[dict[str, Any]]


def _respond(state: _State) -> dict[str, Any]:
    human = [m for m in state["messages"] if isinstance(m, HumanMessage)][-1]
    verb, *names = str(human.content).split()
    files: list[dict[str, Any]]
    if verb == "inline":
        files = [file_entry(n, "text/plain", INLINE_TEXT) for n in names]
    else:
        files = [file_reference(n.rsplit("/", 1)[-1], "", 0, n) for n in names]
    return {"messages": [AIMessage(content=REPLY)], "files": files}


def _build() -> Any:
    builder = StateGraph(_State)
    builder.add_node("respond", _respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile()


graph = _build()
