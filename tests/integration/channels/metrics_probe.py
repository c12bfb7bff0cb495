"""Reads a counter the way an operator does: `GET /metrics` on the service's HTTP app."""

from __future__ import annotations

import re

import httpx
import redis.asyncio as aioredis

from service.http import build_http_app
from service.settings import Settings
from storage import Accounts, Keys, Links

__all__ = ["scrape"]


async def scrape(redis: aioredis.Redis, keys: Keys, sample: str) -> float:
    """The value of one sample line of `/metrics` (e.g. `name{label="x"}`), 0 when absent."""

    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=Settings(_env_file=None),  # type: ignore[call-arg]
        accounts=Accounts(redis, keys=keys),
        links=Links(redis, keys=keys),
        ready=ready,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://switchboard.test") as http:
        text = (await http.get("/metrics")).text
    match = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.MULTILINE)
    return float(match[1]) if match else 0.0
