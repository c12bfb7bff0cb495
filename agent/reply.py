"""Clean reply text: what the assistant said in this turn, and nothing else.

A thread's state holds every turn, tool results and (for some providers) reasoning blocks. The
user must see only this turn's assistant prose, so extraction walks back from the end to the last
real human message (messages the runtime injects, such as loop warnings, do not count) and takes
the newest assistant message that has text. Earlier turns are never reached, so their text can
never leak into a reply when the current turn produced none; then the result is "" and the caller
sends its own fallback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agent.quoted import CONTEXT_NAME
from agent.result import Question

__all__ = [
    "INJECTED_NAMES",
    "assistant_text",
    "content_text",
    "extract_reply",
    "is_injected",
    "last_human_text",
]

INJECTED_NAMES = frozenset({"loop_warning", CONTEXT_NAME})

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)


def content_text(content: str | list[str | dict[str, object]]) -> str:
    """A message content's plain text: the string, or its text blocks joined.

    Only `text` blocks count: reasoning/thinking, tool-use, image and other blocks are dropped.
    """
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def assistant_text(message: AIMessage) -> str:
    """The prose of an assistant message, without inline `<think>` sections some models emit."""
    text = content_text(message.content)
    if "<" in text:
        text = _THINK.sub("", text)
    return text.strip()


def is_injected(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and message.name in INJECTED_NAMES


def last_human_text(messages: Sequence[BaseMessage]) -> str | None:
    """Text of the last real (not injected) human message, or None when there is none."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and not is_injected(message):
            return content_text(message.content)
    return None


def extract_reply(messages: Sequence[BaseMessage], question: Question | None = None) -> str:
    """This turn's reply: the pending clarification if any, else the newest assistant text."""
    if question is not None:
        return question.text
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            if is_injected(message):
                continue
            break
        if isinstance(message, AIMessage):
            text = assistant_text(message)
            if text:
                return text
    return ""
