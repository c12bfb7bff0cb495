"""Make concurrent storage calls actually overlap on the server.

A fresh pool holds one connection: the first racer's round trips finish while the others are
still opening theirs, so a non-atomic read-then-write would pass a race test by luck. Opening the
connections first makes every racer send at once.
"""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

__all__ = ["warm_pool"]


async def warm_pool(client: aioredis.Redis, connections: int) -> None:
    """Leave at least `connections` idle, ready connections in the client's pool."""
    await asyncio.gather(*(client.execute_command("PING") for _ in range(connections)))
