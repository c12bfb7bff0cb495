"""Unauthenticated `/readyz` says whether the process is ready and how many agents cannot
answer, never which (issue 43, low 2): a broken binding's agent URL names an internal host, and
only the admin key sees it."""

from __future__ import annotations

from pathlib import Path

import httpx
import redis.asyncio as aioredis

from service.app import build_core
from service.bindings_sync import API_ORIGIN
from service.http import build_http_app
from storage import BindingsStore, Keys
from tests.integration.service.test_bindings_agent_policy import ADMIN, _settings

HOST = "agents.internal.example"


async def test_readyz_names_a_broken_agents_host_only_to_the_admin(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    settings = _settings(prefix, tmp_path / "a")
    async with build_core(settings, redis, start_intake=False):
        pass  # the file is adopted: later starts keep what the API stores
    doc = f'[{{"platform":"slack","user":"U3","agent":"https://{HOST}:8443","assistant":"a"}}]'
    await BindingsStore(redis, keys=Keys(prefix)).put(doc, origin=API_ORIGIN)

    async def ready() -> bool:
        return True

    async with build_core(settings, redis, start_intake=False) as core:
        app = build_http_app(
            settings=core.settings,
            accounts=core.accounts,
            links=core.links,
            ready=ready,
            bindings=core.bindings_sync,
            status=core.status,
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sb.test") as http:
            anyone = await http.get("/readyz")
            admin = await http.get("/readyz", headers={"Authorization": f"Bearer {ADMIN}"})
    assert anyone.status_code == 200 and admin.status_code == 200
    assert anyone.json()["agents_unavailable"] == 1
    assert HOST not in anyone.text and "https://" not in anyone.text
    assert HOST in str(admin.json()["agents_unavailable"])
