"""Operator-facing hardening of the HTTP app, on the real service (`running_service`) with the
real adapters against fake platforms: parser bombs, readiness of a dead channel, what the admin
config and the API docs reveal."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from service.app import Core, running_service
from service.http import MAX_JSON_DEPTH, build_http_app
from service.settings import Settings
from storage import Accounts, Keys, Links
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack, signed_headers
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

TG_SECRET = "operator-test-webhook-secret"
SLACK_SECRET = "operator-test-signing-secret"
ADMIN_KEY = "operator-admin-key-0123456789"


@pytest.fixture
async def service(
    redis_url: str, prefix: str, tmp_path: Path
) -> AsyncIterator[tuple[Core, httpx.AsyncClient, FakeTelegram, FakeDiscord]]:
    tg, slack = FakeTelegram(), FakeSlack()
    await tg.start()
    await slack.start()
    discord = await FakeDiscord().start()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        http_port=0,
        access="open",
        telegram_bot_token=TOKEN,
        telegram_api_base=tg.base_url,
        telegram_mode="webhook",
        telegram_webhook_secret=TG_SECRET,
        slack_bot_token=slack.bot_token,
        slack_signing_secret=SLACK_SECRET,
        slack_api_base=slack.api_base,
        discord_bot_token=discord.token,
        discord_api_base=discord.api_base,
    )
    try:
        async with running_service(settings) as core:
            base = f"http://127.0.0.1:{core.http_port}"
            async with httpx.AsyncClient(base_url=base) as http:
                yield core, http, tg, discord
    finally:
        await discord.close()
        await slack.stop()
        await tg.stop()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def test_deeply_nested_json_is_a_400_on_both_webhooks_not_a_500(
    service: tuple[Core, httpx.AsyncClient, FakeTelegram, FakeDiscord],
) -> None:
    _, http, _, _ = service
    bomb = json.dumps({"update_id": 1, "message": json.loads(nested(500))})
    bomb = bomb.replace(nested(500), nested(100_000))
    telegram = await http.post(
        "/telegram/webhook",
        content=bomb,
        headers={"content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": TG_SECRET},
    )
    assert telegram.status_code == 400
    assert "nested" in telegram.json()["error"]

    body = json.dumps({"type": "event_callback", "event": {"type": "message"}}).replace(
        '"message"}', '"message", "x": ' + nested(100_000) + "}"
    )
    headers = {"content-type": "application/json", **signed_headers(SLACK_SECRET, body)}
    slack = await http.post("/slack/events", content=body, headers=headers)
    assert slack.status_code == 400

    form = "payload=" + "%5B" * 100_000 + "%5D" * 100_000
    headers = {
        "content-type": "application/x-www-form-urlencoded",
        **signed_headers(SLACK_SECRET, form),
    }
    assert (await http.post("/slack/events", content=form, headers=headers)).status_code == 400


async def test_ordinary_nesting_and_brackets_inside_strings_still_pass(
    service: tuple[Core, httpx.AsyncClient, FakeTelegram, FakeDiscord],
) -> None:
    _, http, _, _ = service
    event = {
        "type": "reaction_added",
        "user": "U1",
        "ts": "1.0",
        "text": "[[[{{{" * 1000,
        "deep": json.loads(nested(MAX_JSON_DEPTH - 5)),
    }
    body = json.dumps({"type": "event_callback", "team_id": "T1", "event": event})
    headers = {"content-type": "application/json", **signed_headers(SLACK_SECRET, body)}
    assert (await http.post("/slack/events", content=body, headers=headers)).status_code == 200


async def test_readiness_reports_a_dead_discord_gateway_until_it_is_back(
    service: tuple[Core, httpx.AsyncClient, FakeTelegram, FakeDiscord],
) -> None:
    _, http, _, discord = service
    assert (await http.get("/readyz")).status_code == 200
    await discord.drop(4012)

    async def status() -> int:
        return (await http.get("/readyz")).status_code

    await wait_until(lambda: _is(status(), 503))
    assert (await http.get("/healthz")).status_code == 200
    await wait_until(lambda: _is(status(), 200), timeout=15)


async def _is(code: object, expected: int) -> bool:
    return await code == expected  # type: ignore[misc]


# -- admin config and API docs (the app alone, on real Redis) ---------------------------------


def _app(redis: aioredis.Redis, keys: Keys, **settings: object) -> httpx.AsyncClient:
    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=Settings(_env_file=None, **settings),  # type: ignore[arg-type]
        accounts=Accounts(redis, keys=keys),
        links=Links(redis, keys=keys),
        ready=ready,
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sb.test")


async def test_admin_config_masks_credentials_in_every_url(
    redis: aioredis.Redis, keys: Keys
) -> None:
    secrets = ["r3dis-pw", "qu3ry-pw", "llm-pw", "tg-t0ken", "sl4ck-q", "g4te-pw", "d1scord-pw"]
    async with _app(
        redis,
        keys,
        admin_key=ADMIN_KEY,
        redis_url="rediss://default:r3dis-pw@db.internal:6380/0?password=qu3ry-pw",
        openai_base_url="https://svc:llm-pw@llm.internal/v1",
        telegram_api_base="https://tg-t0ken@tg-proxy.internal",
        slack_api_base="https://proxy.internal/api/?token=sl4ck-q",
        discord_gateway_url="wss://gw.internal/?auth=g4te-pw",
        discord_api_base="https://bot:d1scord-pw@proxy.internal/api/v10",
    ) as client:
        response = await client.get(
            "/api/admin/config", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
        )
    assert response.status_code == 200
    assert not [s for s in secrets if s in response.text]
    config = response.json()
    assert config["REDIS_URL"] == "rediss://default:***@db.internal:6380/0?password=***"
    assert config["OPENAI_BASE_URL"] == "https://svc:***@llm.internal/v1"
    assert config["TELEGRAM_API_BASE"] == "https://***@tg-proxy.internal"
    assert config["SWITCHBOARD_ADMIN_KEY"] == "***"


async def test_api_docs_are_served_only_when_an_admin_key_is_set(
    redis: aioredis.Redis, keys: Keys
) -> None:
    async with _app(redis, keys) as client:
        assert (await client.get("/api/docs")).status_code == 404
        assert (await client.get("/api/openapi.json")).status_code == 404
        assert (await client.get("/healthz")).status_code == 200
    async with _app(redis, keys, admin_key=ADMIN_KEY) as client:
        assert (await client.get("/api/docs")).status_code == 200
        schema = (await client.get("/api/openapi.json")).json()
        assert "/api/links" in schema["paths"]
        assert ADMIN_KEY not in json.dumps(schema)
