"""One owner across the fleet for an exclusive inbound connection, through a Redis lease.

The owner renews the lease every third of its TTL; a process that cannot renew (lost it, or
Redis unreachable for a whole TTL) closes its connection before the lease can pass to a standby,
so two pollers overlap for at most one renewal interval. Standbys try to take the lease at the
same pace, so a dead owner is replaced within about one TTL plus one interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time

import structlog

from channels.adapter import ExclusiveReceiver
from storage import Leases
from switchboard.errors import StorageError, SwitchboardError

__all__ = ["ConnectionOwner"]

_log = structlog.get_logger(__name__)


class ConnectionOwner:
    def __init__(self, receiver: ExclusiveReceiver, leases: Leases) -> None:
        self._receiver = receiver
        self._leases = leases
        self._name = receiver.connection_name
        self.name = self._name
        self._token = secrets.token_hex(16)
        self._task: asyncio.Task[None] | None = None
        self.owner = False

    async def start(self) -> None:
        """Try once now (a single process owns its connection before it reports started),
        then keep trying or renewing in the background."""
        await self._try_acquire(raise_errors=True)
        self._task = asyncio.create_task(self._loop(), name=f"lease:{self._name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.owner:
            await self._let_go()

    async def _try_acquire(self, *, raise_errors: bool = False) -> None:
        try:
            if not await self._leases.acquire(self._name, self._token):
                return
        except StorageError as exc:
            if raise_errors:
                raise
            _log.warning("lease.acquire_failed", lease=self._name, error=str(exc))
            return
        try:
            await self._receiver.start_receiving()
        except SwitchboardError:
            with contextlib.suppress(StorageError):
                await self._leases.release(self._name, self._token)
            if raise_errors:
                raise
            _log.error("lease.receive_failed", lease=self._name)
            return
        self.owner = True
        _log.info("lease.acquired", lease=self._name)

    async def _let_go(self) -> None:
        self.owner = False
        with contextlib.suppress(Exception):
            await self._receiver.stop_receiving()
        with contextlib.suppress(StorageError):
            await self._leases.release(self._name, self._token)
        _log.info("lease.released", lease=self._name)

    async def _loop(self) -> None:
        every = self._leases.ttl_s / 3
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(every)
            if not self.owner:
                await self._try_acquire()
                renewed = time.monotonic()
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
