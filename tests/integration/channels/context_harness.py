"""What the model was sent with a turn, read from the fake OpenAI server's recorded requests:
the quoted-conversation block before the user's message (`agent.quoted`), as its lines."""

from __future__ import annotations

from agent.quoted import CONTEXT_NAME, TAG
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["context_lines", "user_text"]


def context_lines(model: FakeOpenAI, request: int = -1) -> list[str]:
    """The quoted lines sent with a request's user message ([] when none), time stamps dropped.
    Only the block right before the message counts: an earlier turn's block stays in the
    thread's history further up."""
    messages = model.requests[request].messages
    assert messages[-1]["role"] == "user" and messages[-1].get("name") != CONTEXT_NAME
    block = messages[-2] if len(messages) > 1 else {}
    if block.get("name") != CONTEXT_NAME:
        return []
    body = block["content"].split(f"<{TAG}>\n", 1)[1].rsplit(f"\n</{TAG}>", 1)[0]
    return [line.split("] ", 1)[1] if line.startswith("[") else line for line in body.split("\n")]


def user_text(model: FakeOpenAI, request: int = -1) -> str:
    """The user's own message of a request (the turn's trigger)."""
    return str(model.requests[request].messages[-1]["content"])
