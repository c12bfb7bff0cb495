"""Fault-test fixtures: a fresh fake Telegram Bot API per test; every test here marked slow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.telegram_server import FakeTelegram

__all__: list[str] = []

_HERE = Path(__file__).parent


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is a slow fault test (real kills, bursts, failovers, restarts): `make test`
    leaves them to `make test-slow`, which runs them without parallel neighbours, because their
    timings (leases, paced sends, failover windows) are what they test."""
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.slow)
