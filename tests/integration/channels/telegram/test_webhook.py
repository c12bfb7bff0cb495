"""Telegram webhook mode: `handle_webhook` mounted on a tiny Starlette app, driven over ASGI,
replies going to the fake Bot API through the real aiogram client and the real manager."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from agent.demo import GREETING
from channels.manager import Manager
from channels.telegram.adapter import WEBHOOK_SECRET_HEADER, TelegramAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

SECRET = "s3cret_Webhook-token"
URL = "https://switchboard.example/telegram/webhook"
ANN = FakeTelegram.user(7, "Ann")


@pytest.fixture
async def hook(
    fake: FakeTelegram, make_manager
) -> AsyncIterator[tuple[Manager, httpx.AsyncClient]]:  # type: ignore[no-untyped-def]
    manager = await make_manager()
    adapter = TelegramAdapter(
        token=TOKEN,
        deliver=manager.deliver,
        api_base=fake.base_url,
        mode="webhook",
        webhook_url=URL,
        webhook_secret=SECRET,
    )
    manager.register(adapter)
    await adapter.start()
    app = Starlette(routes=[Route("/telegram/webhook", adapter.handle_webhook, methods=["POST"])])
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://sb") as client:
            yield manager, client
    finally:
        await adapter.stop()


async def post(client: httpx.AsyncClient, body: str, secret: str | None = SECRET) -> int:
    headers = {"content-type": "application/json"}
    if secret is not None:
        headers[WEBHOOK_SECRET_HEADER] = secret
    response = await client.post("/telegram/webhook", content=body, headers=headers)
    return response.status_code


async def test_webhook_is_registered_with_its_secret_and_nothing_polls(
    fake: FakeTelegram, hook: tuple[Manager, httpx.AsyncClient]
) -> None:
    (registered,) = fake.calls_to("setWebhook")
    assert registered["url"] == URL and registered["secret_token"] == SECRET
    assert not fake.calls_to("getUpdates") and not fake.calls_to("deleteWebhook")


async def test_missing_or_wrong_secret_is_401(
    fake: FakeTelegram, hook: tuple[Manager, httpx.AsyncClient]
) -> None:
    _, client = hook
    body = json.dumps(fake.say(fake.dm(ANN), ANN, "hello", push=False))
    assert await post(client, body, secret=None) == 401
    assert await post(client, body, secret="wrong") == 401
    assert await post(client, body, secret=SECRET + "x") == 401
    assert not fake.calls_to("sendMessage")


@pytest.mark.parametrize("body", ["not json", "[1, 2]", '{"update_id": "abc"}', "", '"x"'])
async def test_malformed_body_is_400(hook: tuple[Manager, httpx.AsyncClient], body: str) -> None:
    _, client = hook
    assert await post(client, body) == 400


async def test_good_update_is_answered_once_even_when_delivered_twice(
    fake: FakeTelegram, hook: tuple[Manager, httpx.AsyncClient]
) -> None:
    manager, client = hook
    body = json.dumps(fake.say(fake.dm(ANN), ANN, "hello", push=False))
    assert await post(client, body) == 200
    assert await post(client, body) == 200
    await wait_until(lambda: fake.bot_texts(ANN["id"]))
    await manager.idle()
    assert fake.bot_texts(ANN["id"]) == [GREETING]
