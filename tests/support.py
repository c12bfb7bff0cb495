"""Test helpers shared by unit and integration suites."""

from __future__ import annotations

import asyncio
import inspect
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["free_port", "wait_until"]

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


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
