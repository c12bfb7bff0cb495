"""Retrying the manager's closing steps (record answered, finish the entry) through a storage
blip: each step is idempotent, so running them all again is safe."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from switchboard.errors import StorageError

__all__ = ["Step", "run_idempotent"]

Step = Callable[[], Awaitable[Any]]


async def run_idempotent(steps: Sequence[Step], delays_s: Sequence[float]) -> list[Any]:
    """Run the steps concurrently; on a StorageError run them all again, backing off from
    `delays_s[0]`, at most `len(delays_s)` more times; then the last error is raised."""
    results: list[Any] = []
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(StorageError),
        stop=stop_after_attempt(len(delays_s) + 1),
        wait=wait_exponential(multiplier=delays_s[0], max=5),
        reraise=True,
    ):
        with attempt:
            results = await asyncio.gather(*(step() for step in steps))
    return results
