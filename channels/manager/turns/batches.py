"""Which queued messages one turn answers, and as what text. Pure: no I/O, unit-tested alone.

A batch is the queue front: consecutive typed messages joined in arrival order (with sender names
where several people talk), up to `max_chars` (at least one message, which the gates already held
to that limit), or one button press alone. Unreadable entries and presses for a question that is
no longer open are answered by dropping them, so they never block the queue.

A message that waited too long (`stale_message`) is not answered by the model at all: the time it
was sent is the platform's timestamp where the event carried one, else its arrival in the inbox.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from channels.manager.codec import CorruptPayload, decode_message
from channels.manager.replies.questions import answer_text
from channels.message import InboundMessage
from switchboard.state import PendingQuestion, QueuedItem, entry_arrival_ms

__all__ = [
    "Batch",
    "join_messages",
    "message_cost",
    "message_line",
    "pick_batch",
    "recorded_batch",
    "sent_time",
    "stale_message",
]


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


_SEPARATOR = "\n\n"


def _line(msg: InboundMessage, *, named: bool) -> str:
    return f"{msg.sender_name or msg.sender_id}: {msg.text}" if named else msg.text


def message_line(msg: InboundMessage, *, named: bool) -> str:
    """One message as the agent reads it; `named` where several people talk."""
    return _line(msg, named=named)


def message_cost(msg: InboundMessage, *, named: bool) -> int:
    """Characters one more message adds to a batch's text."""
    return len(_SEPARATOR) + len(_line(msg, named=named))


def join_messages(messages: Sequence[InboundMessage], *, shared: bool) -> str:
    """Messages as one turn: in order, with sender names where several people talk."""
    named = shared and len(messages) > 1
    return _SEPARATOR.join(_line(m, named=named) for m in messages)


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
        if taken:
            # joined, every message costs its separator and, in a group, its sender's name
            cost = len(_SEPARATOR) + len(_line(msg, named=not msg.is_dm))
            if len(taken) == 1 and not msg.is_dm:
                cost += len(_line(taken[0], named=True)) - len(taken[0].text)
            if chars + cost > max_chars:
                break
        else:
            cost = len(msg.text)
        taken.append(msg)
        ids.append(item.entry_id)
        chars += cost
    if not taken:
        return Batch([], dropped, "", False, len(dropped))
    text = join_messages(taken, shared=not taken[-1].is_dm)
    if question is not None:
        text = answer_text(text, question) if len(taken) == 1 else text
    return Batch(taken, [*dropped, *ids], text, question is not None, len(dropped))


def recorded_batch(items: Sequence[QueuedItem], entries: Sequence[str]) -> Batch | None:
    """The batch an earlier attempt recorded an answer for, rebuilt from the queue; None when
    any of its entries has left the queue (the record is stale then)."""
    queued = {item.entry_id: item for item in items}
    if not entries or any(e not in queued for e in entries):
        return None
    messages: list[InboundMessage] = []
    for entry in entries:
        with contextlib.suppress(CorruptPayload):
            messages.append(decode_message(queued[entry].payload))
    if not messages:
        return None
    return Batch(messages, list(entries), "", False, 0)


def sent_time(item: QueuedItem, msg: InboundMessage) -> float | None:
    """When a queued message was sent (epoch seconds): the platform's timestamp, else its arrival
    in the inbox (the entry id's milliseconds, from Redis's clock); None when neither is known."""
    if msg.sent_at > 0:
        return msg.sent_at
    try:
        return entry_arrival_ms(item.entry_id) / 1000
    except ValueError:
        return None


def stale_message(
    items: Sequence[QueuedItem], *, now: float, max_age_s: float
) -> tuple[str, InboundMessage, float] | None:
    """The first queued message sent more than `max_age_s` before `now`, with its age: a day-old
    message answered as if just sent would surprise its sender more than a note saying so.
    `max_age_s` 0 disables the bound. A button press is left alone: the question it answers
    expires on its own clock."""
    if max_age_s <= 0:
        return None
    for item in items:
        try:
            msg = decode_message(item.payload)
        except CorruptPayload:
            continue  # the batch drops it
        if msg.button is not None:
            continue
        sent = sent_time(item, msg)
        if sent is not None and now - sent > max_age_s:
            return item.entry_id, msg, now - sent
    return None
