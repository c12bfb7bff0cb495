"""Test helpers shared by unit and integration suites (no sockets here)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["wait_until"]

T = TypeVar("T")


async def wait_until(
    condition: Callable[[], T | Awaitable[T]], *, timeout: float = 10.0, interval: float = 0.02
) -> T:
    """Poll `condition` until it returns a truthy value; fail with the last value on timeout."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result  # type: ignore[return-value]
        last = result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")
        await asyncio.sleep(interval)
