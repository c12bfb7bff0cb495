"""The real HTTP app on real Redis, driven in-process through httpx's ASGI transport."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from fastapi import FastAPI, Request, Response

from service.http import build_http_app
from service.settings import Settings
from storage import Accounts, Keys, LinkKind, Links, LinkToken

ADMIN_KEY = "admin-key-for-tests-0123456789"
OPENAI_KEY = "sk-test-openai-secret"
TELEGRAM_TOKEN = "123456:telegram-test-secret"


class Clock:
    """Real time plus an offset a test can push forward (to expire tokens without sleeping)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@dataclass
class Api:
    """The app under test plus the stores behind it, for arranging state directly."""

    app: FastAPI
    client: httpx.AsyncClient
    accounts: Accounts
    links: Links
    settings: Settings
    ready_flag: list[bool]
    clock: Clock
    webhook_calls: list[bytes] = field(default_factory=list)
    _keys: dict[str, str] = field(default_factory=dict)

    async def account(self, name: str) -> dict[str, str]:
        """Auth headers for account `name`, created on first use."""
        if name not in self._keys:
            self._keys[name] = await self.accounts.create(name)
        return {"Authorization": f"Bearer {self._keys[name]}"}

    async def server_token(self, workspace: str = "T1", user: str = "U1") -> LinkToken:
        return await self.links.create_token(
            LinkKind.SERVER,
            platform="slack",
            target_id=workspace,
            target_name=f"Slack workspace {workspace}",
            user_id=user,
            user_name="alice",
        )

    async def user_token(self, user: str = "42") -> LinkToken:
        return await self.links.create_token(
            LinkKind.USER,
            platform="telegram",
            target_id=user,
            target_name="bob",
            user_id=user,
            user_name="bob",
        )


@pytest.fixture
async def api(
    redis: aioredis.Redis, keys: Keys, prefix: str, redis_url: str, tmp_path: Path
) -> AsyncIterator[Api]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        admin_key=ADMIN_KEY,
        openai_api_key=OPENAI_KEY,
        telegram_bot_token=TELEGRAM_TOKEN,
    )
    accounts = Accounts(redis, keys=keys)
    clock = Clock()
    links = Links(redis, keys=keys, rate_limit=1000, clock=clock)
    ready_flag = [True]
    calls: list[bytes] = []

    async def ready() -> bool:
        return ready_flag[0]

    async def telegram_hook(request: Request) -> Response:
        calls.append(await request.body())
        return Response(status_code=200)

    app = build_http_app(
        settings=settings,
        accounts=accounts,
        links=links,
        ready=ready,
        webhooks={"/telegram/webhook": telegram_hook},
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://switchboard.test") as client:
        yield Api(app, client, accounts, links, settings, ready_flag, clock, calls)
