"""Steering (`busy=steer`): messages that queue behind a running batch join its agent run.

The agent asks `take` before each model call (`agent.steer`). It takes what queued behind the
batch (`QueueStore.absorb`, fenced by the lock token) in arrival order, as far as a batch may
grow: typed messages up to `max_chars`, never a button press (a press answers a question, which
is a turn of its own). Taken messages stay in the queue; the batch grows by them (`grown`), so
they are answered, recorded in the ledger and removed together with it, and a worker that dies
mid-run leaves them queued for the next holder like the rest of the batch.

The first model call of a run asks nothing: the batch was read from the queue a moment before,
so a plain one-call turn pays no extra Redis round trip for steering.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

import structlog

from channels.adapter import AckKind, Adapter
from channels.manager.codec import CorruptPayload, decode_message
from channels.manager.ports import QueueStore
from channels.manager.replies.responder import Responder
from channels.manager.turns.batches import Batch, message_cost, message_line
from channels.message import InboundMessage
from switchboard.errors import StorageError
from switchboard.state import Lock

__all__ = ["Steering"]

_log = structlog.get_logger(__name__)

Background = Callable[[Coroutine[Any, Any, None]], None]


class Steering:
    def __init__(
        self,
        *,
        queue: QueueStore,
        lock: Lock,
        batch: Batch,
        adapter: Adapter,
        responder: Responder,
        max_chars: int,
        background: Background,
    ) -> None:
        self._queue = queue
        self._lock = lock
        self._batch = batch
        self._adapter = adapter
        self._say = responder
        self._background = background
        self._room = max_chars - len(batch.text)
        self._after = batch.entry_ids[-1] if batch.entry_ids else ""
        self._asked = 0
        self._closed = False
        self._messages: list[InboundMessage] = []
        self._ids: list[str] = []

    async def take(self) -> list[str]:
        """Messages that queued since the last call, as texts for the agent."""
        self._asked += 1
        if self._asked == 1 or self._closed or not self._batch.messages:
            return []
        try:
            items = await self._queue.absorb(self._lock, self._after)
        except StorageError as exc:  # not steered: the message runs as the next turn
            _log.warning("steer.absorb_failed", error=str(exc))
            return []
        if not items:  # None: the lock is gone, the hold cancels the run
            return []
        shared = not self._batch.last.is_dm
        taken: list[InboundMessage] = []
        for item in items:
            try:
                msg = decode_message(item.payload)
            except CorruptPayload:
                self._ids.append(item.entry_id)  # answered by dropping it, as a batch does
                self._after = item.entry_id
                continue
            cost = message_cost(msg, named=shared)
            if msg.button is not None or cost > self._room:
                self._closed = True  # it and what follows run as the next turn
                break
            self._room -= cost
            taken.append(msg)
            self._ids.append(item.entry_id)
            self._after = item.entry_id
        if not taken:
            return []
        self._messages += taken
        _log.info("message.steered", count=len(taken))
        for msg in taken:
            self._background(self._say.acknowledge(self._adapter, msg, AckKind.STEERED))
        return [message_line(msg, named=shared) for msg in taken]

    def grown(self, batch: Batch) -> Batch:
        """The batch with what the run took in: what its answer answers."""
        if not self._ids:
            return batch
        return replace(
            batch,
            messages=[*batch.messages, *self._messages],
            entry_ids=[*batch.entry_ids, *self._ids],
        )
