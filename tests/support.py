"""Test helpers shared by unit and integration suites."""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
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


_PORTS_FROM, _PORTS_PER_WORKER = 20_000, 1_000  # below Linux's ephemeral range (32768-60999)


@functools.cache
def _worker_ports() -> Iterator[int]:
    """This process's block of ports, endlessly, from a pid-dependent start inside it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    start = _PORTS_FROM + (int(worker) % 12 if worker.isdigit() else 0) * _PORTS_PER_WORKER
    block = range(start, start + _PORTS_PER_WORKER)
    offset = os.getpid() % 200
    return itertools.cycle([*block[offset:], *block[:offset]])


def free_port() -> int:
    """A loopback TCP port nobody listens on right now, for a server a test starts later.

    Not one the kernel picks (`bind(0)`): those come from the ephemeral range, where every
    outgoing connection of the parallel workers also takes its local port, so one could take
    the port before our server binds it. Each xdist worker walks a block of its own below that
    range instead, never handing out a port twice."""
    for port in itertools.islice(_worker_ports(), _PORTS_PER_WORKER):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port in this worker's block")
