"""Retrying the manager's idempotent steps (receipts, record answered, finish the entry) through
a storage blip: running them all again is safe."""

from __future__ import annotations

import asyncio
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
    stop: stop_base = stop_after_attempt(len(delays_s) + 1)
    if at_least_s > 0:
        stop = stop & stop_after_delay(at_least_s)
    results: list[Any] = []
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(StorageError),
        stop=stop,
        wait=wait_exponential(multiplier=delays_s[0], max=1),  # soon after Redis is back
        reraise=True,
    ):
        with attempt:
            results = await asyncio.gather(*(step() for step in steps))
    return results
