"""Redis round trips per plain DM turn, counted on the wire through the production wiring.

The manager (`build_core`: inbox, gates, thread queue, reply ledger, Redis checkpoints, the
built-in agent on the demo model) talks to Redis through a loopback proxy that counts the
requests the client writes: a pipeline or a script is one write, so one round trip. The intake's
idle traffic (its blocking read, once a second, and housekeeping) is measured over an idle window
first and subtracted. Messages are sent one at a time, each awaited through the recording
adapter (not through Redis), from one DM sender who is already known. Shared by
`tests/integration/channels/test_round_trips.py` and `bench/redis_trips.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as aioredis

from channels.message import InboundMessage, Platform
from service.app import build_core
from service.settings import Settings
from storage import connect
from tests.fakes.recording_adapter import RecordingAdapter
from tests.fakes.tcp_proxy import TcpProxy

__all__ = ["Trips", "counting_client", "measure"]


@dataclass(frozen=True, slots=True)
class Trips:
    per_turn: float
    idle_per_s: float
    turn_ms: float
    last_reply: str


@contextlib.asynccontextmanager
async def counting_client(redis_url: str) -> AsyncIterator[tuple[aioredis.Redis, TcpProxy]]:
    """A client whose requests go through a counting proxy (`proxy.requests`)."""
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    client = connect(proxy.url)
    try:
        yield client, proxy
    finally:
        await client.aclose()
        await proxy.stop()


def _dm(text: str, n: int) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="D1",
        sender_id="U1",
        sender_name="alice",
        text=text,
        provider_message_id=f"trip-{n}",
        is_dm=True,
    )


async def _answered(adapter: RecordingAdapter, n: int) -> None:
    while len(adapter.texts()) < n:  # noqa: ASYNC110 - the recording adapter has no event
        await asyncio.sleep(0.002)


async def measure(redis_url: str, prefix: str, turns: int, idle_s: float = 4.0) -> Trips:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=prefix,
        data_dir=Path(tempfile.mkdtemp()),
        rate_limit_per_minute=1_000_000,
        streaming="off",
    )
    async with counting_client(redis_url) as (client, proxy), build_core(settings, client) as core:
        adapter = RecordingAdapter()
        core.manager.register(adapter)
        for n in range(3):  # warm-up: the thread exists, the scripts are loaded
            await core.manager.deliver(_dm(f"echo warm{n}", n))
            await _answered(adapter, n + 1)
        await asyncio.sleep(0.5)
        proxy.requests = 0
        await asyncio.sleep(idle_s)
        idle_per_s = proxy.requests / idle_s
        proxy.requests = 0
        started = time.monotonic()
        for n in range(turns):
            await core.manager.deliver(_dm(f"echo t{n}", 100 + n))
            await _answered(adapter, 4 + n)
        elapsed = time.monotonic() - started
        trips = proxy.requests - idle_per_s * elapsed
    return Trips(trips / turns, idle_per_s, elapsed / turns * 1000, adapter.texts()[-1])
