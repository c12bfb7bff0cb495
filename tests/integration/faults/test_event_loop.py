"""`switchboard serve` runs on uvloop by default, and on the standard loop when told to, answering
the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.processes import Worker
from tests.integration.faults.telegram_service import post_until_taken
from tests.support import wait_until

pytestmark = pytest.mark.timeout(120)

ANN = FakeTelegram.user(7, "Ann")


@pytest.mark.parametrize(("setting", "loop"), [(None, "uvloop"), ("asyncio", "asyncio")])
async def test_serve_runs_on_the_configured_event_loop(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path, setting: str | None, loop: str
) -> None:
    env = {"SWITCHBOARD_EVENT_LOOP": setting} if setting else {}
    worker = Worker(fake, redis_url, prefix, tmp_path / "w", env=env)
    try:
        await worker.start()
        async with worker.http() as http:
            await post_until_taken(http, fake.say(fake.dm(ANN), ANN, "echo loop-tok", push=False))
        await wait_until(lambda: fake.bot_texts(ANN["id"]) == ["loop-tok"], timeout=30)
        [started] = worker.log_events("service.started")
    finally:
        await worker.stop()
    assert started["event_loop"] == loop
