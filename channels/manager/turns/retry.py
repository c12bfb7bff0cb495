"""Retrying the manager's idempotent steps (receipts, record answered, finish the entry) through
a storage blip: running them all again is safe.

The first attempt runs bare: tenacity's retry loop costs more than the Redis round trip it
guards (about 30 us per use), and nearly every call succeeds at once. Only after a failure does
the loop start, with the same backoff and bounds as if it had run from the start."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)
from tenacity.stop import stop_base

from switchboard.errors import StorageError

__all__ = ["Step", "run_idempotent"]

Step = Callable[[], Awaitable[Any]]


async def run_idempotent(
    steps: Sequence[Step], delays_s: Sequence[float], *, at_least_s: float = 0.0
) -> list[Any]:
    """Run the steps concurrently; on a StorageError run them all again, backing off from
    `delays_s[0]`, at least `len(delays_s)` more times and for at least `at_least_s` (a turn's
    closing steps keep trying for the lock's TTL: its keeper runs meanwhile); then the last
    error is raised."""
    started = time.monotonic()
    try:
        return await _all(steps)
    except StorageError:
        if not delays_s:
            raise
    first = delays_s[0]
    await asyncio.sleep(min(first, 1.0))  # tenacity's first wait: `multiplier * 2**0`
    stop: stop_base = stop_after_attempt(len(delays_s))
    if at_least_s > 0:
        stop = stop & stop_after_delay(max(0.0, at_least_s - (time.monotonic() - started)))
    results: list[Any] = []
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(StorageError),
        stop=stop,
        wait=wait_exponential(multiplier=first * 2, max=1),  # soon after Redis is back
        reraise=True,
    ):
        with attempt:
            results = await _all(steps)
    return results


async def _all(steps: Sequence[Step]) -> list[Any]:
    if len(steps) == 1:  # most calls: no task for `gather` to wrap it in
        return [await steps[0]()]
    return list(await asyncio.gather(*(step() for step in steps)))
