"""Redis restarted in the middle of a burst: every message answered, exactly once.

While Redis is down the webhook answers 503 (the message was not made durable), so the poster,
playing Telegram, redelivers it; turns in flight fail on storage and are retried or reclaimed once
Redis is back with its AOF.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from service.app import running_service
from storage import EmbeddedValkey
from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.telegram_service import (
    answers_per_token,
    post_until_taken,
    settings_for,
    users,
)
from tests.support import free_port, wait_until

pytestmark = pytest.mark.timeout(300)


async def test_a_redis_restart_mid_burst_loses_and_duplicates_nothing(
    fake: FakeTelegram, tmp_path: Path
) -> None:
    port = free_port()
    valkey = EmbeddedValkey(tmp_path / "valkey", port=port)
    await valkey.start()
    people = users(200)
    tokens = [f"r{i}z" for i in range(len(people))]
    updates = [
        fake.say(fake.dm(u), u, f"echo {t}", push=False)
        for u, t in zip(people, tokens, strict=True)
    ]
    settings = settings_for(fake, valkey.url, "sb:", tmp_path, mode="webhook", lock_ttl_s=2.0)
    tries: list[int] = []
    try:
        async with running_service(settings) as core:
            base = f"http://127.0.0.1:{core.http_port}"
            limits = httpx.Limits(max_connections=200)
            async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as http:

                async def post(update: dict) -> None:  # type: ignore[type-arg]
                    tries.append(await post_until_taken(http, update))

                first, rest = updates[:100], updates[100:]
                burst = asyncio.gather(*(post(u) for u in first))
                await wait_until(lambda: len(fake.calls_to("sendMessage")) >= 30, timeout=60)
                answered_before = len(fake.calls_to("sendMessage"))
                await valkey.stop()  # mid-burst: some answered, some in flight, some not taken
                later = asyncio.gather(*(post(u) for u in rest))
                await asyncio.sleep(1.0)
                await valkey.start()
                await asyncio.gather(burst, later)
            await wait_until(
                lambda: sum(answers_per_token(fake, tokens).values()) >= len(tokens), timeout=120
            )
            await core.manager.idle(timeout=60)
        assert answers_per_token(fake, tokens) == dict.fromkeys(tokens, 1)
        assert answered_before < len(tokens)  # the restart really came mid-burst
        sorry = [c["text"] for c in fake.calls_to("sendMessage") if c["text"].startswith("Sorry")]
        assert sorry == []
    finally:
        await valkey.stop()
