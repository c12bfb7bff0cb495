"""The service reads Redis's `maxmemory-policy` at start: a policy that may evict our keys is a
warning in the log and in `/readyz`; a server that refuses CONFIG GET is fine ("unknown")."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from service.app import running_service
from service.settings import Settings
from storage import connect, maxmemory_policy

__all__: list[str] = []

# Sets the server's eviction policy: on a shared server (REDIS_URL) nothing may run beside it.
pytestmark = pytest.mark.server_wide


def _settings(redis_url: str, prefix: str, data: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=data,
        http_port=0,
        access="open",
    )


async def _readyz(settings: Settings) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with capture_logs() as logs:
        async with running_service(settings) as core:
            url = f"http://127.0.0.1:{core.http_port}"
            async with httpx.AsyncClient(base_url=url) as http:
                response = await http.get("/readyz")
    assert response.status_code == 200
    return response.json(), [e for e in logs if e["event"] == "redis.eviction_policy"]


@pytest.fixture
async def volatile_lru(redis: aioredis.Redis) -> AsyncIterator[None]:
    """The test server under `volatile-lru` (a common managed default), restored afterwards."""
    before = await maxmemory_policy(redis)
    await redis.config_set("maxmemory-policy", "volatile-lru")
    try:
        yield
    finally:
        await redis.config_set("maxmemory-policy", before or "noeviction")


async def test_the_default_noeviction_adds_no_warning(
    redis: aioredis.Redis, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    assert await maxmemory_policy(redis) == "noeviction"
    body, warned = await _readyz(_settings(redis_url, prefix, tmp_path))
    assert "warnings" not in body and "redis_maxmemory_policy" not in body
    assert warned == []


async def test_volatile_lru_is_a_warning_in_the_log_and_in_readyz(
    volatile_lru: None, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    body, warned = await _readyz(_settings(redis_url, prefix, tmp_path))
    assert body["status"] == "ready"
    assert body["redis_maxmemory_policy"] == "volatile-lru"
    (warning,) = body["warnings"]
    assert "volatile-lru" in warning and "noeviction" in warning
    assert [(e["log_level"], e["policy"]) for e in warned] == [("warning", "volatile-lru")]


async def test_a_denied_config_get_is_reported_unknown_not_an_error(
    redis: aioredis.Redis, redis_url: str, redis_cluster: bool, prefix: str, tmp_path: Path
) -> None:
    if redis_cluster:
        pytest.skip("ACL users are per node on a cluster")
    user, password = f"noconfig-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    await redis.acl_setuser(
        user, enabled=True, passwords=[f"+{password}"], keys=["*"], commands=["+@all", "-config"]
    )
    limited_url = redis_url.replace("redis://", f"redis://{user}:{password}@", 1)
    limited = connect(limited_url)
    try:
        with capture_logs() as logs:
            assert await maxmemory_policy(limited) is None
        body, warned = await _readyz(_settings(limited_url, prefix, tmp_path))
    finally:
        await limited.aclose()
        await redis.acl_deluser(user)
    assert [(e["event"], e["log_level"]) for e in logs] == [("redis.config_unreadable", "debug")]
    assert body["redis_maxmemory_policy"] == "unknown"
    assert "warnings" not in body and warned == []
