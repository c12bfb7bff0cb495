"""The worker side of the inbox: read entries with bounded concurrency, keep them, finish them.

One reader task per inbox shard takes only as many entries as there are free slots
(`max_concurrent_turns`, shared fairly between the shards' readers), so a burst waits in Redis,
where every worker can take a share, never in this process's memory. A
housekeeping task keeps this worker's entries fresh (a long turn is not mistaken for a dead
worker), takes over entries of workers that stopped, and hands due orphaned queues to the sweeper.
An entry that fails on storage is retried here a few times, then left for any worker to reclaim.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import structlog

from channels.manager.config import ManagerConfig
from channels.manager.context import ChatOrder, Outcome
from channels.manager.ports import InboxStore, OrphanStore
from switchboard.errors import StorageError
from switchboard.state import Entry

__all__ = ["EntryHandler", "Intake", "Sweeper"]

_log = structlog.get_logger(__name__)

EntryHandler = Callable[[Entry], Awaitable[Outcome]]
Sweeper = Callable[[str, float], Awaitable[None]]
_READ_BLOCK_S = 1.0
_READ_BATCH = 32


class Intake:
    def __init__(
        self,
        inbox: InboxStore,
        orphans: OrphanStore,
        *,
        handle: EntryHandler,
        sweep: Sweeper,
        config: ManagerConfig,
    ) -> None:
        self._inbox = inbox
        self._orphans = orphans
        self._handle = handle
        self._sweep = sweep
        self._config = config
        self._free = config.max_concurrent_turns  # entries (and sweeps) this worker may start
        self._freed = asyncio.Event()
        self._inflight: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._sweeping: set[str] = set()
        self._running = False
        self._chat_tail: dict[str, ChatOrder] = {}  # the latest message held per chat
        self._orders: dict[str, ChatOrder] = {}  # entry id → its place

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    async def start(self) -> None:
        await self._inbox.ensure_group()
        self._running = True
        shards = self._inbox.shards
        self._loops = [
            *(
                asyncio.create_task(self._read_loop(shard, shards), name=f"inbox:read:{shard}")
                for shard in range(shards)
            ),
            asyncio.create_task(self._housekeeping(), name="inbox:housekeeping"),
        ]

    async def stop(self, timeout: float) -> None:
        """Stop taking entries, let those in hand finish (up to `timeout`), cancel the rest;
        cancelled entries stay pending and another worker (or the next start) takes them."""
        if not self._running and not self._loops:
            return
        self._running = False
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops = []
        if self._tasks:
            _done, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
            if pending:
                _log.warning("service.drain_timed_out", unfinished=len(pending), timeout_s=timeout)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def wait_idle(self, timeout: float) -> None:
        """Until nothing is in hand here and the inbox holds no unfinished entry."""
        deadline = time.monotonic() + timeout
        while True:
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=max(0.0, deadline - time.monotonic()))
            elif await self._inbox.backlog() == 0 and not self._tasks:
                return
            else:
                await asyncio.sleep(0.01)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self._tasks)} message task(s) still running")

    def track(self, task: asyncio.Task[None]) -> None:
        """Supervise a side task (receipts, sweeps) like an entry: idle waits for it, and a
        failure is logged, never lost."""
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("task.failed", task=task.get_name(), exc_info=task.exception())

    # -- loops -------------------------------------------------------------------------------

    def _take(self, most: int) -> int:
        n = max(0, min(most, self._free))
        self._free -= n
        return n

    def _give(self, n: int) -> None:
        self._free += n
        if n > 0:
            self._freed.set()

    async def _read_loop(self, shard: int, shards: int) -> None:
        failures = 0
        busy = False  # the last read filled its batch: more is waiting in this shard
        while self._running:
            while self._free <= 0:
                self._freed.clear()
                await self._freed.wait()
            # one slot stays out of the blocking reads: housekeeping's sweeps and reclaims need
            # it, or an idle worker would hold every slot in reads that return nothing; the rest
            # is shared between the shards' readers, so a quiet shard leaves slots to the others,
            # and a shard whose last read came back full reads as much as is free (it returns
            # at once, so it holds no slot a quiet shard would wait for)
            share = self._free - 1 if busy else (self._free - 1) // shards
            taken = self._take(min(_READ_BATCH, max(1, share)))
            try:
                entries = await self._inbox.read(taken, _READ_BLOCK_S, shard)
                failures = 0
            except StorageError as exc:
                self._give(taken)
                failures += 1
                _log.warning("inbox.read_failed", error=str(exc), failures=failures)
                await asyncio.sleep(min(5.0, 0.1 * 2**failures))
                continue
            busy = len(entries) >= taken
            self._give(taken - len(entries))
            for entry in entries:
                self._spawn(entry)

    def order_for(self, entry_id: str, chat: str) -> ChatOrder:
        """The entry's place behind the earlier messages of its chat held by this worker."""
        order = self._orders.get(entry_id)
        if order is None:
            tail = self._chat_tail.get(chat)
            order = ChatOrder(after=tail.done if tail is not None else None, chat=chat)
            self._orders[entry_id] = order
            self._chat_tail[chat] = order
        return order

    def _release_order(self, entry_id: str) -> None:
        order = self._orders.pop(entry_id, None)
        if order is None:
            return
        order.done.set()
        if self._chat_tail.get(order.chat) is order:
            del self._chat_tail[order.chat]

    def _spawn(self, entry: Entry) -> None:
        self._inflight.add(entry.entry_id)
        task = asyncio.create_task(self._run(entry), name=f"entry:{entry.entry_id}")
        self.track(task)

    async def _run(self, entry: Entry) -> None:
        try:
            for delay in (*self._config.retry_delays_s, None):
                outcome = await self._handle(entry)
                if outcome is not Outcome.RETRY:  # NOT_MINE too: it idles until reclaimed
                    return
                if delay is None:
                    _log.warning("inbox.entry_left_for_reclaim", entry=entry.entry_id)
                    return
                await asyncio.sleep(delay)
        finally:
            self._inflight.discard(entry.entry_id)
            self._release_order(entry.entry_id)
            self._give(1)

    async def _housekeeping(self) -> None:
        every = self._config.sweep_every_s
        touch_every = max(every, self._inbox.claim_idle_ms / 3000)
        last_touch = time.monotonic()
        while self._running:
            await asyncio.sleep(every)
            try:
                if time.monotonic() - last_touch >= touch_every:
                    last_touch = time.monotonic()
                    await self._inbox.touch(sorted(self._inflight))
                await self._reclaim()
                await self._sweep_due()
                await self._inbox.observe()
            except StorageError as exc:
                _log.warning("inbox.housekeeping_failed", error=str(exc))
            except Exception as exc:  # never let housekeeping die: it is what recovers crashes
                _log.error("inbox.housekeeping_crashed", exc_info=exc)

    async def _reclaim(self) -> None:
        taken = self._take(_READ_BATCH)
        if not taken:
            return
        try:
            entries, _gone = await self._inbox.reclaim(taken)  # gone ids left the PEL already
        except StorageError:
            self._give(taken)
            raise
        fresh = [e for e in entries if e.entry_id not in self._inflight]
        self._give(taken - len(fresh))
        for entry in fresh:
            _log.info("inbox.reclaimed", entry=entry.entry_id, deliveries=entry.deliveries)
            self._spawn(entry)

    async def _sweep_due(self) -> None:
        for thread_id, seen in await self._orphans.due():
            if thread_id in self._sweeping:
                continue
            if not self._take(1):
                return
            self._sweeping.add(thread_id)
            task = asyncio.create_task(self._sweep_one(thread_id, seen), name="sweep")
            self.track(task)

    async def _sweep_one(self, thread_id: str, seen: float) -> None:
        try:
            with contextlib.suppress(StorageError):
                await self._sweep(thread_id, seen)
        finally:
            self._sweeping.discard(thread_id)
            self._give(1)
