"""One owner across the fleet for an exclusive inbound connection, through a Redis lease.

The owner renews the lease every third of its TTL; a process that cannot renew (lost it, or
Redis unreachable for a whole TTL) closes its connection before the lease can pass to a standby,
so two pollers overlap for at most one renewal interval. Standbys try to take the lease at the
same pace, so a dead owner is replaced within about one TTL plus one interval. While a
connection opens (a Discord gateway may need longer than a TTL to be READY) its lease is renewed.

A sharded connection (the Discord gateway with `SWITCHBOARD_DISCORD_SHARDS` > 1) has one lease per
shard, and a `FairShare` keeps a process from holding more than ceil(shards / live processes) of
them: a process alone takes every shard, one that sees a newcomer lets its surplus go (one shard
per renewal interval) for the newcomer to take, and survivors take a dead one's shards once its
leases and its heartbeat have expired.

Every loop here also ends on its own `_stopping` flag, not on cancellation alone: on Python 3.11
`asyncio.wait_for`, which redis-py puts around each command's send, drops a cancellation that
lands as the send completes (CPython gh-86296), and a loop that lived on would keep beating or
renewing for a process that let go, while its `stop()` waited forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import structlog

from channels.adapter import ExclusiveReceiver
from storage import Leases
from switchboard.errors import StorageError, SwitchboardError

__all__ = ["ConnectionOwner", "FairShare", "ShardedReceiver", "exclusive_parts"]

_log = structlog.get_logger(__name__)


@runtime_checkable
class ShardedReceiver(Protocol):
    """An adapter whose inbound connection splits into parts with one owner each (Discord's
    shards); a single part is the whole connection."""

    @property
    def connection_name(self) -> str:
        """Names the group of shard leases (whose members share them out)."""

    @property
    def shards(self) -> Sequence[ExclusiveReceiver]:
        """One receiver per shard, each with its own lease name."""


def exclusive_parts(adapter: object) -> list[ExclusiveReceiver]:
    """The connections of `adapter` that need a lease each (none: it receives freely)."""
    if isinstance(adapter, ShardedReceiver):
        return list(adapter.shards)
    if isinstance(adapter, ExclusiveReceiver) and adapter.connection_name:
        return [adapter]
    return []


class FairShare:
    """How many of a group's leases this process may hold: ceil(total / live members), where
    members beat into Redis every third of the lease TTL."""

    def __init__(self, leases: Leases, group: str, total: int) -> None:
        self._leases = leases
        self.group = group
        self.total = total
        self._member = secrets.token_hex(8)
        self._owners: list[ConnectionOwner] = []
        self._live = 1
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def quota(self) -> int:
        return math.ceil(self.total / max(self._live, 1))

    def held(self) -> int:
        return sum(1 for o in self._owners if o.owner or o.opening)

    def join(self, owner: ConnectionOwner) -> None:
        self._owners.append(owner)

    def may_take(self) -> bool:
        return self.held() < self.quota

    def should_shed(self, owner: ConnectionOwner) -> bool:
        """Over quota, the last held lease (in shard order) goes first, one at a time."""
        held = [o for o in self._owners if o.owner]
        return len(held) > self.quota and held[-1] is owner

    async def start(self) -> None:
        """Count ourselves in before the first acquire, so starters split the shards."""
        self._live = await self._leases.beat(self.group, self._member)
        self._task = asyncio.create_task(self._loop(), name=f"lease-share:{self.group}")

    async def stop(self) -> None:
        self._stopping = True
        await _cancel_and_wait(self._task)
        with contextlib.suppress(StorageError):
            await self._leases.leave(self.group, self._member)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._leases.ttl_s / 3)
            if self._stopping:
                return
            try:
                live = await self._leases.beat(self.group, self._member)
            except StorageError as exc:
                _log.warning("lease.beat_failed", group=self.group, error=str(exc))
                continue
            if self._stopping:
                return
            if live != self._live:
                self._live = live
                _log.info("lease.members", group=self.group, live=live, quota=self.quota)


class ConnectionOwner:
    def __init__(
        self, receiver: ExclusiveReceiver, leases: Leases, *, share: FairShare | None = None
    ) -> None:
        self._receiver = receiver
        self._leases = leases
        self._share = share
        if share is not None:
            share.join(self)
        self._name = receiver.connection_name
        self.name = self._name
        self._token = secrets.token_hex(16)
        self._task: asyncio.Task[None] | None = None
        self.owner = False
        self.opening = False  # lease taken, connection not yet up: counts against the share
        self._stopping = False

    async def start(self) -> None:
        """Try once now (a single process owns its connection before it reports started),
        then keep trying or renewing in the background."""
        await self._try_acquire(raise_errors=True)
        self._task = asyncio.create_task(self._loop(), name=f"lease:{self._name}")

    async def stop(self) -> None:
        self._stopping = True
        await _cancel_and_wait(self._task)
        if self.owner:
            await self._let_go()

    async def _try_acquire(self, *, raise_errors: bool = False) -> None:
        if self._share is not None and not self._share.may_take():
            return
        try:
            if not await self._leases.acquire(self._name, self._token):
                return
        except StorageError as exc:
            if raise_errors:
                raise
            _log.warning("lease.acquire_failed", lease=self._name, error=str(exc))
            return
        try:
            if not await self._open():
                return
        except SwitchboardError:
            with contextlib.suppress(StorageError):
                await self._leases.release(self._name, self._token)
            if raise_errors:
                raise
            _log.error("lease.receive_failed", lease=self._name)
            return
        self.owner = True
        _log.info("lease.acquired", lease=self._name)

    async def _open(self) -> bool:
        """`start_receiving`, renewing the lease meanwhile (a gateway may need longer than a TTL
        to become ready); False, with the connection closed again, if the lease was lost."""
        lost = asyncio.Event()
        done = False

        async def keep() -> None:
            while not done:
                await asyncio.sleep(self._leases.ttl_s / 3)
                with contextlib.suppress(StorageError):
                    if not done and not await self._leases.renew(self._name, self._token):
                        lost.set()
                        return

        keeper = asyncio.create_task(keep(), name=f"lease-open:{self._name}")
        self.opening = True
        try:
            await self._receiver.start_receiving()
        finally:
            self.opening = False
            done = True
            await _cancel_and_wait(keeper)
        if lost.is_set():
            _log.warning("lease.lost", lease=self._name)
            with contextlib.suppress(Exception):
                await self._receiver.stop_receiving()
            return False
        return True

    async def _let_go(self) -> None:
        self.owner = False
        with contextlib.suppress(Exception):
            await self._receiver.stop_receiving()
        with contextlib.suppress(StorageError):
            await self._leases.release(self._name, self._token)
        _log.info("lease.released", lease=self._name)

    async def _hand_over(self) -> None:
        """Shed a lease without a gap in receiving: release it for the process that is due it,
        but keep this connection open until another holder has kept the lease for one TTL (its
        own connection is up by then), or nobody took it within three. Meanwhile both receive
        the shard's events, and dedupe answers each once; closing first would lose the events
        of the handover, since a new gateway session replays nothing."""
        self.owner = False
        ttl = self._leases.ttl_s
        try:
            with contextlib.suppress(StorageError):
                await self._leases.release(self._name, self._token)
            taken_at: float | None = None
            deadline = time.monotonic() + 3 * ttl
            while time.monotonic() < deadline:
                await asyncio.sleep(ttl / 3)
                with contextlib.suppress(StorageError):
                    taken = await self._leases.holder(self._name) is not None
                    taken_at = (taken_at or time.monotonic()) if taken else None
                if taken_at is not None and time.monotonic() - taken_at >= ttl:
                    break
        finally:
            with contextlib.suppress(Exception):
                await self._receiver.stop_receiving()
        _log.info("lease.handed_over", lease=self._name)

    async def _loop(self) -> None:
        every = self._leases.ttl_s / 3
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(every)
            if self._stopping:
                return
            if not self.owner:
                await self._try_acquire()
                renewed = time.monotonic()
                continue
            if self._share is not None and self._share.should_shed(self):
                _log.info("lease.shed", lease=self._name, quota=self._share.quota)
                await self._hand_over()
                continue
            try:
                held = await self._leases.renew(self._name, self._token)
            except StorageError as exc:
                _log.warning("lease.renew_failed", lease=self._name, error=str(exc))
                held = time.monotonic() - renewed < self._leases.ttl_s - every
            else:
                if held:
                    renewed = time.monotonic()
            if not held:
                _log.warning("lease.lost", lease=self._name)
                self.owner = False
                with contextlib.suppress(Exception):
                    await self._receiver.stop_receiving()


async def _cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Cancel a loop of ours and wait for it to end, so nothing renews or beats after a stop."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
