"""Holding a thread: one keeper for everything done under its lock.

Like aiogram's `RedisEventIsolation.lock`, the hold is an `async with` around the whole handling
of a thread's batches (file fetches, the model run, questions, notices, every send and upload,
recording the batch answered), and whoever enters it keeps the lock alive and learns of its
loss in one place. So a slow send can no longer outlive the lock: while the lock holds, the send
may wait as long as the platform makes it; once the lock is gone, the body is cancelled and the
hold raises `LockLost` (the next holder resends from the reply ledger instead of re-running).
The keeper also takes a `/stop` or an interrupt from any process and passes it to `on_stop`.

The keeper beats often (every second at most) while a request to stop could still change
something, and only every third of the TTL while the batch's answer is being sent (`quiet()`):
a reply waiting minutes for Telegram's send budget costs a handful of extensions, not one a
second per waiting thread.

What records something that already happened (a sent piece's receipt, the batch recorded
answered) runs `protected()`: a lost lock does not cancel it, since it stays true whoever holds
the lock now; the caller checks `lost` afterwards.

The keeper ends on `_released` as well as on its cancellation: on Python 3.11 a cancellation that
lands as a Redis command's send completes is dropped (`asyncio.wait_for`, CPython gh-86296), and
a keeper that lived on would hold the thread's lock, and its conversation, forever.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from types import TracebackType

import structlog

from channels.manager.ports import LockStore
from switchboard.errors import StorageError
from switchboard.state import Lock, StopRequest

__all__ = ["LockLost", "ThreadHold"]

_log = structlog.get_logger(__name__)


class LockLost(Exception):
    """The thread lock expired under the hold; the batch is left to the next holder."""


class ThreadHold:
    def __init__(
        self, locks: LockStore, lock: Lock, *, on_stop: Callable[[StopRequest], object]
    ) -> None:
        self._locks = locks
        self._lock = lock
        self._on_stop = on_stop
        self._body: asyncio.Task[object] | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._protected = 0
        self._unprotected = asyncio.Event()
        self._unprotected.set()
        self._quiet = False
        self._woken = asyncio.Event()
        self._released = False
        self.lost = False

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Beats as rarely as the lock allows: nothing a stop could cancel runs meanwhile."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False
            self._woken.set()  # back to frequent beats at once

    @contextlib.contextmanager
    def protected(self) -> Iterator[None]:
        """Not cancelled by a lost lock (the caller checks `lost` afterwards)."""
        self._protected += 1
        self._unprotected.clear()
        try:
            yield
        finally:
            self._protected -= 1
            if not self._protected:
                self._unprotected.set()

    async def __aenter__(self) -> ThreadHold:
        self._body = asyncio.current_task()
        self._keeper = asyncio.create_task(self._keep(), name=f"hold:{self._lock.thread_id}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        assert self._keeper is not None and self._body is not None
        self._released = True
        self._keeper.cancel()
        await asyncio.gather(self._keeper, return_exceptions=True)
        if self.lost and exc_type is asyncio.CancelledError and self._body.uncancel() == 0:
            raise LockLost from None  # our own cancellation: the body stopped because of it
        return False

    async def _keep(self) -> None:
        """Extend the lock every third of its TTL; a Redis blip is retried on the next beat
        (the lock outlives several); a lock found gone cancels the body. Any other failure of
        a beat is logged and the next beat tried too: a keeper that died would leave the body
        running on a lock nobody extends, unaware when it is lost."""
        lock = self._lock
        often, rarely = max(0.05, min(1.0, lock.ttl_s / 3)), max(0.05, lock.ttl_s / 3)
        while True:
            self._woken.clear()
            if self._quiet:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(rarely):
                        await self._woken.wait()
            else:
                await asyncio.sleep(often)
            if self._released:
                return
            try:
                held, stop = await self._locks.keep(lock)
            except StorageError as exc:
                _log.warning("lock.extend_failed", error=str(exc))
                continue
            except Exception as exc:
                _log.error("lock.extend_crashed", exc_info=exc)
                continue
            if self._released:
                return
            if not held:
                _log.warning("lock.lost")
                self.lost = True
                while self._protected:  # let the bookkeeping finish (the body may go from
                    await self._unprotected.wait()  # one protected step straight to the next)
                assert self._body is not None
                self._body.cancel()
                return
            if stop:
                _log.info("turn.stop_requested", kind=stop.name.lower())
                self._on_stop(stop)
