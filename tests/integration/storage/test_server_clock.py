"""Shared scores are kept in Redis's clock, as the leases are: a worker whose own clock is an
hour off neither books past a window other workers count (send budgets) nor starves or rushes
a thread other workers sweep (the orphan index). The skew is a worker's `time.time`; the
server, the client library and asyncio (monotonic) are untouched."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis

from storage import Keys, Orphans, SendWindow, SendWindows

__all__: list[str] = []

HOUR = 3600.0


@contextlib.contextmanager
def clock_off_by(monkeypatch: pytest.MonkeyPatch, seconds: float) -> Iterator[None]:
    """This worker's wall clock `seconds` off for the calls inside (NTP gone wrong)."""
    real = time.time
    with monkeypatch.context() as patch:
        patch.setattr(time, "time", lambda: real() + seconds)
        yield


async def test_a_worker_whose_clock_is_behind_still_fills_the_window_the_others_count(
    redis: aioredis.Redis, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_a_second = SendWindow("c:C1", limit=1, seconds=2.0)
    late = SendWindows(redis, keys=keys, owner="tg:1")
    on_time = SendWindows(redis, keys=keys, owner="tg:1")
    with clock_off_by(monkeypatch, -HOUR):
        assert await late.reserve([one_a_second]) == 0.0
    # scored in the worker's clock, the booking would be an hour old: pruned, and a second send
    # would go out at once, past the platform's limit
    assert 1.0 < await on_time.reserve([one_a_second]) <= 2.0


async def test_a_hold_by_a_worker_whose_clock_is_ahead_ends_when_the_retry_after_does(
    redis: aioredis.Redis, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = SendWindow("all", limit=3, seconds=1.0)
    ahead = SendWindows(redis, keys=keys, owner="discord:abc")
    with clock_off_by(monkeypatch, HOUR):
        await ahead.hold([window], 2.0)
    wait = await SendWindows(redis, keys=keys, owner="discord:abc").reserve([window])
    assert wait is not None and 1.0 < wait <= 2.0  # not an hour and two seconds


async def test_a_thread_watched_by_a_worker_whose_clock_is_ahead_is_swept_in_time(
    redis: aioredis.Redis, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    with clock_off_by(monkeypatch, HOUR):
        await Orphans(redis, keys=keys, grace_s=0.3).watch("t1")
    sweeper = Orphans(redis, keys=keys, grace_s=0.3)
    assert await sweeper.due() == []
    await asyncio.sleep(0.5)
    assert [t for t, _ in await sweeper.due()] == ["t1"]  # not an hour later


async def test_a_thread_watched_by_a_worker_whose_clock_is_behind_is_not_swept_early(
    redis: aioredis.Redis, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    with clock_off_by(monkeypatch, -HOUR):
        await Orphans(redis, keys=keys, grace_s=60).watch("t1")
    assert await Orphans(redis, keys=keys, grace_s=60).due() == []  # its holder has a minute


async def test_a_sweeper_whose_clock_is_ahead_does_not_take_a_thread_before_it_is_due(
    redis: aioredis.Redis, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    await Orphans(redis, keys=keys, grace_s=60).watch("t1")
    with clock_off_by(monkeypatch, HOUR):
        assert await Orphans(redis, keys=keys, grace_s=60).due() == []
