"""The whole service on the fake Telegram Bot API, for burst and restart tests: settings, a
webhook poster that behaves like Telegram (redelivers until it gets a 2xx), and exactly-once
checks over what the fake recorded."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import httpx

from channels.telegram.adapter import WEBHOOK_SECRET_HEADER
from service.settings import Settings
from tests.fakes.telegram_server import TOKEN, FakeTelegram

__all__ = ["SECRET", "answers_per_token", "post_until_taken", "settings_for", "users"]

SECRET = "burst-secret_0123"


def settings_for(
    fake: FakeTelegram,
    redis_url: str,
    prefix: str,
    data: Path,
    *,
    mode: Literal["polling", "webhook"],
    **overrides: Any,
) -> Settings:
    fields: dict[str, Any] = {
        "redis_url": redis_url,
        "redis_prefix": prefix,
        "data_dir": data,
        "http_port": 0,
        "access": "open",
        "public_url": "https://switchboard.example",
        "rate_limit_per_minute": 100_000,
        "telegram_bot_token": TOKEN,
        "telegram_api_base": fake.base_url,
        "telegram_mode": mode,
        "telegram_webhook_secret": SECRET,
        **overrides,
    }
    return Settings(_env_file=None, **fields)  # type: ignore[call-arg]


def users(n: int, first: int = 10_000) -> list[dict[str, Any]]:
    return [FakeTelegram.user(first + i, f"User{i}") for i in range(n)]


async def post_until_taken(
    http: httpx.AsyncClient, update: dict[str, Any], *, give_up_s: float = 120.0
) -> int:
    """Telegram's side of a webhook: resend until a 2xx; returns how many tries it took."""
    body = json.dumps(update)
    headers = {"content-type": "application/json", WEBHOOK_SECRET_HEADER: SECRET}
    deadline = asyncio.get_running_loop().time() + give_up_s
    tries = 0
    while True:
        tries += 1
        try:
            response = await http.post("/telegram/webhook", content=body, headers=headers)
            if response.status_code == 200:
                return tries
        except httpx.TransportError:
            pass
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"update {update['update_id']} never taken")
        await asyncio.sleep(0.2)


def answers_per_token(fake: FakeTelegram, tokens: list[str]) -> dict[str, int]:
    """How many bot messages carry each token (each user message carries its own)."""
    texts = [c["text"] for c in fake.calls_to("sendMessage", ok_only=True)]
    seen = Counter(token for text in texts for token in tokens if token in text.split())
    return {token: seen[token] for token in tokens}
