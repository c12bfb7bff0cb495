"""The values that travel through the manager: one message's context, and one turn's session."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from agent.result import TurnContext
from channels.adapter import Adapter, ReplyStream
from channels.commands import Command
from channels.message import InboundMessage, ReplyTarget, conversation_key
from switchboard.state import BusyMode, Lock, RateDecision

if TYPE_CHECKING:
    from channels.manager.turns.batches import Batch
    from channels.manager.turns.delivered import Delivered
    from channels.manager.turns.hold import ThreadHold

__all__ = [
    "ChatOrder",
    "MessageContext",
    "Next",
    "Outcome",
    "TurnSession",
    "chat_route",
    "turn_context",
]


def chat_route(msg: InboundMessage) -> str:
    """The message's chat as the inbox routes it: one shard per chat keeps its order, and
    `collect` mode looks for the chat's later messages by it."""
    return f"{msg.platform}:{msg.chat_id}"


class Outcome(StrEnum):
    """What became of an inbox entry, which decides how the intake finishes it."""

    ANSWERED = "answered"  # replied, notified or ignored on purpose: mark answered, finish entry
    QUEUED = "queued"  # the thread's queue owns it now (watched): finish the entry
    HANDED_OVER = "handed_over"  # answered in a turn, which finished the entry with its batch
    DUPLICATE = "duplicate"  # another entry carries this message: finish this one
    RETRY = "retry"  # a storage error: keep the entry, try again, then leave it to reclaim
    NOT_MINE = "not_mine"  # for a platform this process does not serve: leave it to one that does
    OBSERVED = "observed"  # recorded as conversation context, never answered: finish entry


@dataclass(slots=True)
class ChatOrder:
    """This message's place among the messages of its chat that this worker holds: it joins
    its thread's queue only after the one before it did (or stopped short of it), so two
    messages read together keep their order even though they run the gates concurrently."""

    after: asyncio.Event | None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    chat: str = ""

    @property
    def first(self) -> bool:
        """No earlier message of the chat is still on its way to the thread's queue."""
        return self.after is None or self.after.is_set()

    async def wait_turn(self) -> None:
        if self.after is not None:
            await self.after.wait()


@dataclass(slots=True)
class MessageContext:
    """One inbox entry on its way through the gates; gates fill in what they learn."""

    adapter: Adapter
    msg: InboundMessage
    entry_id: str
    payload: bytes
    deliveries: int = 1
    command: Command | None = None
    conversation: str = ""
    thread_id: str | None = None
    turn_order: ChatOrder | None = None  # set by the intake: queue after earlier messages
    rate: RateDecision | None = None  # the flood limit's verdict, when taken with the dedupe claim
    thread_hint: str | None = None  # the DM's thread, read with the dedupe claim (DedupeGate)

    def __post_init__(self) -> None:
        self.conversation = conversation_key(self.msg)


# The rest of the gate chain, as a gate sees it.
Next = Callable[[MessageContext], Awaitable[Outcome]]


@dataclass(slots=True)
class TurnSession:
    """One holder's run of turns on a thread, from taking its lock to letting it go."""

    adapter: Adapter
    thread_id: str
    lock: Lock
    own_entry: str | None = None  # the inbox entry this worker still has to finish, if any
    target: ReplyTarget | None = None
    context: TurnContext = field(default_factory=lambda: TurnContext(user_id=""))
    stream: ReplyStream | None = None  # the streamed reply waiting for its final text
    batch: Batch | None = None  # the batch being answered
    attempt: int = 0  # how often that batch was taken, this time included
    hold: ThreadHold | None = None  # the keeper of `lock`, while held
    answered: Delivered | None = None  # the batch's whole answer is out; only closing is left
    mode: BusyMode = BusyMode.QUEUE  # the conversation's busy mode, as this agent can serve it
    streaming: bool | None = None  # its binding's streaming; None: the operator's setting

    def protected(self) -> contextlib.AbstractContextManager[None]:
        """Bookkeeping a lost lock must not cut short (see `ThreadHold.protected`)."""
        return self.hold.protected() if self.hold is not None else contextlib.nullcontext()

    def quiet(self) -> contextlib.AbstractContextManager[None]:
        """Sending a recorded answer: the keeper beats rarely (see `ThreadHold.quiet`)."""
        return self.hold.quiet() if self.hold is not None else contextlib.nullcontext()

    @property
    def lost(self) -> bool:
        return self.hold is not None and self.hold.lost


def turn_context(msg: InboundMessage, *, fence: str) -> TurnContext:
    return TurnContext(
        user_id=msg.sender_id,
        user_name=msg.sender_name,
        platform=str(msg.platform),
        conversation_key=conversation_key(msg),
        fence=fence,
    )
