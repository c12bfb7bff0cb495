"""Hundreds of chats writing at once: every message answered exactly once, no error replies.

The whole service (`running_service`: real aiogram adapter, uvicorn, manager, Redis) against the
fake Bot API: 500 private chats through the webhook, 300 through long polling.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from service.app import running_service
from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.telegram_service import (
    answers_per_token,
    post_until_taken,
    settings_for,
    users,
)
from tests.support import wait_until

pytestmark = pytest.mark.timeout(300)


def _no_errors(fake: FakeTelegram) -> list[str]:
    return [
        c["text"]
        for c in fake.calls_to("sendMessage")
        if c["text"].startswith("Sorry") or "too fast" in c["text"]
    ]


async def test_500_chats_at_once_through_the_webhook_each_get_one_answer(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    people = users(500)
    tokens = [f"w{i}z" for i in range(len(people))]
    updates = [
        fake.say(fake.dm(u), u, f"echo {t}", push=False)
        for u, t in zip(people, tokens, strict=True)
    ]
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="webhook")
    async with running_service(settings) as core:
        limits = httpx.Limits(max_connections=500)
        base = f"http://127.0.0.1:{core.http_port}"
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as http:
            await asyncio.gather(*(post_until_taken(http, u) for u in updates))
        await wait_until(lambda: len(fake.calls_to("sendMessage")) >= len(tokens), timeout=180)
        await core.manager.idle(timeout=60)
    assert answers_per_token(fake, tokens) == dict.fromkeys(tokens, 1)
    assert _no_errors(fake) == []


async def test_300_chats_at_once_through_polling_each_get_one_answer(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    people = users(300)
    tokens = [f"p{i}z" for i in range(len(people))]
    settings = settings_for(fake, redis_url, prefix, tmp_path, mode="polling")
    async with running_service(settings, http=False) as core:
        fake.push_many(
            [
                fake.say(fake.dm(u), u, f"echo {t}", push=False)
                for u, t in zip(people, tokens, strict=True)
            ]
        )
        await wait_until(lambda: len(fake.calls_to("sendMessage")) >= len(tokens), timeout=180)
        await core.manager.idle(timeout=60)
    assert answers_per_token(fake, tokens) == dict.fromkeys(tokens, 1)
    assert _no_errors(fake) == []
