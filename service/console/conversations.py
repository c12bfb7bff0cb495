"""The Conversations page's facts: recent conversations (from the thread map's sliding TTLs), a
thread's queue, and its recent turns read back from its checkpoints. Read when an admin opens
the page; a turn writes nothing for it.

A turn is a person's message and the agent's final text after it; its run id and time come from
the checkpoint written when that reply was added (older ones may have been pruned:
`SWITCHBOARD_CHECKPOINTS_KEEP`, then only the newest turn has them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from storage import RedisCheckpointSaver

__all__ = ["TurnView", "platform_of", "recent_turns"]

_PLATFORMS = {"tg": "telegram", "slack": "slack", "discord": "discord", "console": "console"}
_HISTORY = 30  # checkpoints read for run ids and times; each carries the whole conversation


@dataclass(frozen=True, slots=True)
class TurnView:
    asked: str
    answered: str
    run_id: str  # "" when its checkpoint is gone
    at: float | None  # when the reply was recorded


def platform_of(conversation_key: str) -> str:
    return _PLATFORMS.get(conversation_key.partition(":")[0], "")


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )


def _turns(messages: list[Any]) -> list[tuple[str, str, int]]:
    """(message, final reply, how many messages the conversation had once it was given)."""
    turns: list[tuple[str, str, int]] = []
    for index, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            turns.append((_text(message), "", index + 1))
        elif isinstance(message, AIMessage) and turns and _text(message).strip():
            asked, _, _ = turns[-1]
            turns[-1] = (asked, _text(message), index + 1)
    return turns


async def recent_turns(
    saver: RedisCheckpointSaver, thread_id: str, *, limit: int = 10
) -> list[TurnView]:
    """The thread's last `limit` turns, newest first."""
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    history = [c async for c in saver.alist(config, limit=_HISTORY)]
    if not history:
        return []
    messages = history[0].checkpoint["channel_values"].get("messages", [])
    written: dict[int, tuple[str, float]] = {}
    for found in reversed(history):  # oldest first: a count's first checkpoint wins
        count = len(found.checkpoint["channel_values"].get("messages", []))
        at = datetime.fromisoformat(found.checkpoint["ts"]).timestamp()
        written.setdefault(count, (str(found.metadata.get("run_id", "")), at))
    views = []
    for asked, answered, count in _turns(messages)[-limit:]:
        run_id, when = written.get(count, ("", None))
        views.append(TurnView(asked, answered, run_id, when))
    return list(reversed(views))
