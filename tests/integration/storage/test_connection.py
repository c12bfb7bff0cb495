"""Connections: the embedded Valkey owns its data dir, persists across restarts, and errors stay ours.

These start their own embedded servers in tmp dirs (not the session server).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from storage import EmbeddedValkey, connect, open_redis
from switchboard.errors import StorageError

__all__: list[str] = []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _ping(url: str) -> bool:
    client = connect(url)
    try:
        return bool(await client.ping())
    finally:
        await client.aclose()


async def test_embedded_valkey_keeps_data_across_a_restart_on_the_same_dir(
    tmp_path: Path,
) -> None:
    first = EmbeddedValkey(tmp_path)
    await first.start()
    try:
        client = connect(first.url)
        await client.set("thread", "kept ✓")
        await client.aclose()
    finally:
        await first.stop()

    second = EmbeddedValkey(tmp_path)
    await second.start()
    try:
        client = connect(second.url)
        assert await client.get("thread") == "kept ✓".encode()
        await client.aclose()
    finally:
        await second.stop()
    assert any((tmp_path / "appendonlydir").iterdir())


async def test_a_second_server_on_a_dir_in_use_fails_clearly_until_the_first_stops(
    tmp_path: Path,
) -> None:
    first = EmbeddedValkey(tmp_path)
    await first.start()
    try:
        second = EmbeddedValkey(tmp_path)
        with pytest.raises(StorageError) as info:
            await second.start()
        message = str(info.value)
        assert str(second.data_dir) in message
        assert "in use" in message
        assert "REDIS_URL" in message
        with pytest.raises(StorageError):
            _ = second.url  # it never started
        assert await _ping(first.url) is True  # the first one is unharmed
    finally:
        await first.stop()

    await second.start()
    try:
        assert await _ping(second.url) is True
    finally:
        await second.stop()


async def test_open_redis_without_url_runs_an_embedded_server_and_stops_it_on_exit(
    tmp_path: Path,
) -> None:
    async with open_redis(None, tmp_path) as client:
        await client.set("k", b"v")
        assert await client.get("k") == b"v"
        port = client.connection_pool.connection_kwargs["port"]
        with pytest.raises(StorageError):
            await EmbeddedValkey(tmp_path).start()

    probe = connect(f"redis://127.0.0.1:{port}/0")
    try:
        with pytest.raises(RedisConnectionError):
            await probe.ping()
    finally:
        await probe.aclose()
    # The data dir is free again.
    again = EmbeddedValkey(tmp_path)
    await again.start()
    await again.stop()


async def test_open_redis_with_an_unreachable_url_raises_storage_error_without_secrets(
    tmp_path: Path,
) -> None:
    port = _closed_port()
    url = f"redis://admin:hunter2-secret@127.0.0.1:{port}/0"
    with pytest.raises(StorageError) as info:
        async with open_redis(url, tmp_path):
            pass
    assert str(info.value) == f"cannot reach Redis at 127.0.0.1:{port}: connection refused"
    assert "hunter2" not in str(info.value)
    assert "hunter2" not in repr(info.value)
    assert info.value.__suppress_context__
    assert not (tmp_path / "switchboard.lock").exists()  # no embedded server was involved


async def test_a_malformed_url_raises_storage_error_without_echoing_the_password(
    tmp_path: Path,
) -> None:
    # An unencoded "/" in the password makes urllib read its tail as the port and quote it.
    for url in ("redis://:hunter/2secret@127.0.0.1:6379/0", "http://:hunter2secret@host"):
        with pytest.raises(StorageError) as info:
            async with open_redis(url, tmp_path):
                pass
        assert "secret" not in str(info.value)
        assert "hunter" not in str(info.value)


async def test_a_full_pool_makes_callers_wait_instead_of_failing(redis_url: str) -> None:
    client = connect(redis_url, max_connections=2)
    try:
        # Twenty blocking calls share two connections: each waits its turn, none raises.
        results = await asyncio.gather(
            *(client.blpop([f"sb:test:nothing:{i}"], 0.05) for i in range(20))
        )
        assert results == [None] * 20
    finally:
        await client.aclose()
