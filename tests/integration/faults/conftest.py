"""Fault-test fixtures: a fresh fake Telegram Bot API per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.telegram_server import FakeTelegram

__all__: list[str] = []


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
