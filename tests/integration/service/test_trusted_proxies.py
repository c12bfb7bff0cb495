"""Which address the admin lockout counts (issue 43), on the real service's uvicorn on loopback:
`X-Forwarded-For` is believed only from SWITCHBOARD_TRUSTED_PROXIES, so a client can neither
rotate the header to escape the limit nor name someone else's address to lock them out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from structlog.testing import capture_logs

from service.app import running_service
from service.settings import Settings

ADMIN_KEY = "trusted-proxy-admin-key-5f2c9e71"
LIMIT = 10  # wrong keys per address per minute (AdminAuth's default)


@asynccontextmanager
async def serving(
    redis_url: str, prefix: str, tmp_path: Path, trusted: str = ""
) -> AsyncIterator[str]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        http_host="127.0.0.1",
        http_port=0,
        admin_key=ADMIN_KEY,
        trusted_proxies=trusted,
    )
    async with running_service(settings) as core:
        yield f"http://127.0.0.1:{core.http_port}"


def client(base: str, source: str = "127.0.0.1") -> httpx.AsyncClient:
    """A client connecting from `source` (any 127/8 address reaches loopback on Linux)."""
    transport = httpx.AsyncHTTPTransport(local_address=source)
    return httpx.AsyncClient(base_url=base, transport=transport)


async def guess(http: httpx.AsyncClient, forwarded_for: str) -> httpx.Response:
    return await http.get(
        "/api/admin/config",
        headers={
            "Authorization": "Bearer wrong-key-0123456789abcdef",
            "X-Forwarded-For": forwarded_for,
        },
    )


async def test_rotating_x_forwarded_for_does_not_reset_the_limit(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    async with serving(redis_url, prefix, tmp_path) as base, client(base) as http:
        for i in range(LIMIT):
            assert (await guess(http, f"198.51.100.{i}")).status_code == 401
        fresh = await http.get(
            "/api/admin/config",
            headers={"Authorization": f"Bearer {ADMIN_KEY}", "X-Forwarded-For": "198.51.100.99"},
        )
        assert fresh.status_code == 429


async def test_naming_another_address_in_the_header_does_not_lock_it_out(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    with capture_logs() as logs:
        async with serving(redis_url, prefix, tmp_path) as base:
            async with client(base) as attacker:
                for _ in range(LIMIT):
                    assert (await guess(attacker, "127.0.0.2")).status_code == 401
                assert (await guess(attacker, "127.0.0.2")).status_code == 429
            async with client(base, source="127.0.0.2") as admin:
                shown = await admin.get(
                    "/api/admin/config", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
                )
                assert shown.status_code == 200
    failed = [e for e in logs if e["event"] == "admin.auth_failed"]
    assert len(failed) == LIMIT and {e["client"] for e in failed} == {"127.0.0.1"}


async def test_from_a_trusted_proxy_the_header_names_the_client(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    with capture_logs() as logs:
        async with (
            serving(redis_url, prefix, tmp_path, trusted="10.0.0.0/8, 127.0.0.1") as base,
            client(base) as proxy,
        ):
            for _ in range(LIMIT):
                assert (await guess(proxy, "203.0.113.7")).status_code == 401
            right = {"Authorization": f"Bearer {ADMIN_KEY}"}
            locked = await proxy.get(
                "/api/admin/config", headers={**right, "X-Forwarded-For": "203.0.113.7"}
            )
            assert locked.status_code == 429
            other = await proxy.get(
                "/api/admin/config", headers={**right, "X-Forwarded-For": "203.0.113.8"}
            )
            assert other.status_code == 200
    failed = [e for e in logs if e["event"] == "admin.auth_failed"]
    assert {e["client"] for e in failed} == {"203.0.113.7"}
