"""Which queued messages one turn answers, and as what text. Pure: no I/O, unit-tested alone.

A batch is the queue front: consecutive typed messages joined in arrival order (with sender names
where several people talk), up to `max_chars` (at least one message, which the gates already held
to that limit), or one button press alone. Unreadable entries and presses for a question that is
no longer open are answered by dropping them, so they never block the queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from channels.manager.codec import CorruptPayload, decode_message
from channels.manager.questions import answer_text
from channels.message import InboundMessage
from storage import PendingQuestion, QueuedItem

__all__ = ["Batch", "join_messages", "pick_batch"]


@dataclass(frozen=True, slots=True)
class Batch:
    messages: list[InboundMessage] = field(default_factory=list)
    entry_ids: list[str] = field(default_factory=list)  # what `finish` marks answered
    text: str = ""
    resume: bool = False  # the text answers `question`
    dropped: int = 0  # unreadable or stale entries answered by dropping them

    @property
    def last(self) -> InboundMessage:
        return self.messages[-1]


def join_messages(messages: Sequence[InboundMessage], *, shared: bool) -> str:
    """Messages as one turn: in order, with sender names where several people talk."""
    if len(messages) == 1 or not shared:
        return "\n\n".join(m.text for m in messages)
    return "\n\n".join(f"{m.sender_name or m.sender_id}: {m.text}" for m in messages)


def pick_batch(
    items: Sequence[QueuedItem], question: PendingQuestion | None, *, max_chars: int
) -> Batch:
    dropped: list[str] = []
    taken: list[InboundMessage] = []
    ids: list[str] = []
    chars = 0
    for item in items:
        try:
            msg = decode_message(item.payload)
        except CorruptPayload:
            dropped.append(item.entry_id)
            continue
        if msg.button is not None:
            if taken:
                break  # a press is a turn of its own
            index = msg.button.option_index
            if (
                question is None
                or msg.button.question_id != question.question_id
                or not 0 <= index < len(question.options)
            ):
                dropped.append(item.entry_id)
                continue
            answer = question.options[index]
            return Batch([msg], [*dropped, item.entry_id], answer, True, len(dropped))
        if taken and chars + len(msg.text) > max_chars:
            break
        taken.append(msg)
        ids.append(item.entry_id)
        chars += len(msg.text)
    if not taken:
        return Batch([], dropped, "", False, len(dropped))
    text = join_messages(taken, shared=not taken[-1].is_dm)
    if question is not None:
        text = answer_text(text, question) if len(taken) == 1 else text
    return Batch(taken, [*dropped, *ids], text, question is not None, len(dropped))
