"""Redis round trips per plain DM turn, counted on the wire (issue 30).

The production wiring (`build_core`: inbox, gates, thread queue, reply ledger, Redis checkpoints,
the built-in agent on the demo model) talks to the test's Redis through a loopback proxy that
counts the requests the client writes: a pipeline or a script is one write, so one round trip.
The intake's idle traffic (its blocking read and housekeeping) is measured over an idle window
and subtracted. Today's count, traced command by command: inbox append, inbox read, admission
(dedupe claim and flood limit, one pipeline), conversation, queue submit, checkpoint load,
checkpoint write, reply ledger, turn finish, inbox finish. A change that adds one fails here; `bench/redis_trips.py` prints the number.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import pytest

from channels.message import InboundMessage, Platform
from service.app import build_core
from service.settings import Settings
from storage import connect
from tests.fakes.recording_adapter import RecordingAdapter
from tests.fakes.tcp_proxy import TcpProxy

__all__: list[str] = []

TURNS = 30
IDLE_S = 4.0
BUDGET = 10  # round trips per plain DM turn; the target is 8


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


async def test_a_plain_dm_turn_makes_no_more_redis_round_trips_than_its_budget(
    redis_url: str, prefix: str, redis_cluster: bool
) -> None:
    if redis_cluster:
        pytest.skip("a cluster client talks to every node directly; one proxy cannot count it")
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    client = connect(proxy.url)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=prefix,
        data_dir=Path(tempfile.mkdtemp()),
        rate_limit_per_minute=1_000_000,
        streaming="off",
    )
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter()
            core.manager.register(adapter)
            for n in range(3):  # warm-up: the thread exists, the scripts are loaded
                await core.manager.deliver(_dm(f"echo warm{n}", n))
                await _answered(adapter, n + 1)
            await asyncio.sleep(0.5)
            proxy.requests = 0
            await asyncio.sleep(IDLE_S)
            idle_per_s = proxy.requests / IDLE_S
            proxy.requests = 0
            started = time.monotonic()
            for n in range(TURNS):
                await core.manager.deliver(_dm(f"echo t{n}", 100 + n))
                await _answered(adapter, 4 + n)
            per_turn = (proxy.requests - idle_per_s * (time.monotonic() - started)) / TURNS
    finally:
        await client.aclose()
        await proxy.stop()
    assert adapter.texts()[-1].endswith(f"t{TURNS - 1}")
    assert per_turn <= BUDGET + 0.5, f"{per_turn:.1f} round trips per turn"
