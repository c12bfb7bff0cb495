"""UsageDesk on real Redis: the checks the manager makes before a turn, what it records after
one, and the `/usage` reply (issue 18's seed cases)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from agent import ModelCall, TurnResult, TurnUsage
from channels import InboundMessage, Platform
from channels.usage import Budget, UsageDesk
from storage import Keys, UsageLedger, UsageLimits, connect

WED = datetime(2031, 5, 14, 10, 30, tzinfo=UTC).timestamp()
SUN = datetime(2031, 5, 18, 20, 0, tzinfo=UTC).timestamp()


def _msg(sender: str = "7", chat: str = "100") -> InboundMessage:
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id="",
        chat_id=chat,
        sender_id=sender,
        sender_name="Ann",
        text="hi",
        provider_message_id="m1",
        is_dm=True,
    )


def _turn(run_id: str, micros: int, model: str = "gpt-test") -> TurnResult:
    call = ModelCall(model=model, input_tokens=10, output_tokens=5, cost_micros=micros)
    return TurnResult(reply_text="ok", run_id=run_id, usage=TurnUsage((call,)))


def _desk(redis: aioredis.Redis, keys: Keys, budget: Budget, now: float = WED) -> UsageDesk:
    return UsageDesk(ledger=UsageLedger(redis, keys=keys, clock=lambda: now), budget=budget)


async def test_under_budget_is_allowed(redis: aioredis.Redis, keys: Keys) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=1_000, weekly_micros=5_000))
    await desk.record(_msg(), _turn("r1", 999))
    assert await desk.refusal(_msg()) is None


async def test_daily_limit_reached_refuses_with_the_daily_reset(
    redis: aioredis.Redis, keys: Keys
) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=1_000, weekly_micros=5_000))
    await desk.record(_msg(), _turn("r1", 600))
    await desk.record(_msg(), _turn("r2", 400))  # used == limit: exceeded
    notice = await desk.refusal(_msg())
    assert notice is not None
    assert "daily" in notice and "2031-05-15 00:00 UTC" in notice and "in 14 h" in notice
    assert "$" not in notice and "0.001" not in notice


async def test_weekly_limit_reached_refuses_with_the_monday_reset(
    redis: aioredis.Redis, keys: Keys
) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=1_000, weekly_micros=1_500), now=SUN)
    await desk.record(_msg(), _turn("r1", 900))
    await desk.ledger.reset("telegram", "7")  # a fresh day, the same week
    await desk.record(_msg(), _turn("r2", 600))
    notice = await desk.refusal(_msg())
    assert notice is not None
    assert "weekly" in notice and "Monday 2031-05-19 00:00 UTC" in notice and "in 4 h" in notice


async def test_the_notice_is_sent_once_per_window_per_chat(
    redis: aioredis.Redis, keys: Keys
) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=100))
    await desk.record(_msg(), _turn("r1", 100))
    first = await desk.refusal(_msg())
    again = await desk.refusal(_msg())
    elsewhere = await desk.refusal(_msg(chat="200"))
    assert first and elsewhere
    assert again == ""  # still refused, but silently

    sent: list[str] = []

    async def notify(msg: InboundMessage, text: str) -> None:
        sent.append(text)

    assert not await desk.admit(_msg(), notify)
    assert sent == []


async def test_other_users_are_unaffected(redis: aioredis.Redis, keys: Keys) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=100))
    await desk.record(_msg("7"), _turn("r1", 100))
    assert await desk.refusal(_msg("7")) is not None
    assert await desk.refusal(_msg("8")) is None


class _Door:
    """A loopback TCP listener that counts connections and hangs up at once: a Redis that is
    down, and a witness that nobody even tried to talk to Redis."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        async def hang_up(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            writer.close()

        self._server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


@pytest.fixture
async def dead_redis(keys: Keys) -> AsyncIterator[tuple[_Door, UsageLedger]]:
    door = _Door()
    await door.start()
    client = connect(f"redis://127.0.0.1:{door.port}/0")
    try:
        yield door, UsageLedger(client, keys=keys, clock=lambda: WED)
    finally:
        await client.aclose()
        await door.stop()


async def test_both_limits_zero_makes_no_redis_call(
    dead_redis: tuple[_Door, UsageLedger],
) -> None:
    door, ledger = dead_redis
    desk = UsageDesk(ledger=ledger, budget=Budget(0, 0))
    with capture_logs() as logs:
        assert await desk.refusal(_msg()) is None
        assert await desk.usage_text(_msg()) == "No usage limits are set here."
    assert door.connections == 0
    assert logs == []


async def test_redis_down_allows_the_turn_and_logs(dead_redis: tuple[_Door, UsageLedger]) -> None:
    door, ledger = dead_redis
    desk = UsageDesk(ledger=ledger, budget=Budget(daily_micros=100))
    with capture_logs() as logs:
        assert await desk.refusal(_msg()) is None
        await desk.record(_msg(), _turn("r1", 50))  # never raises
    assert door.connections > 0
    events = [entry["event"] for entry in logs]
    assert "usage.check_failed" in events and "usage.record_failed" in events


async def test_recording_is_once_per_turn_and_skips_free_turns(
    redis: aioredis.Redis, keys: Keys, prefix: str
) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=10_000))
    await desk.record(_msg(), _turn("r0", 0))
    free = TurnResult(reply_text="ok", run_id="r-free", usage=TurnUsage())
    await desk.record(_msg(), free)
    assert await redis.keys(f"{prefix}*") == []
    await desk.record(_msg(), _turn("r1", 300))
    await desk.record(_msg(), _turn("r1", 300))  # the same turn again
    report = await desk.report("telegram", "7")
    assert (report.daily.used_micros, report.weekly.used_micros) == (300, 300)


async def test_spend_is_counted_per_model_and_platform(redis: aioredis.Redis, keys: Keys) -> None:
    desk = _desk(redis, keys, Budget())
    labels = {"platform": "telegram", "model": "metric-model-x"}
    before = REGISTRY.get_sample_value("switchboard_model_spend_microdollars_total", labels) or 0
    await desk.record(_msg(), _turn("r1", 1_234, model="metric-model-x"))
    after = REGISTRY.get_sample_value("switchboard_model_spend_microdollars_total", labels)
    assert after == before + 1_234


async def test_usage_text_shows_percent_and_resets_but_no_amounts(
    redis: aioredis.Redis, keys: Keys
) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=1_000_000, weekly_micros=0))
    await desk.record(_msg(), _turn("r1", 500_000))
    text = await desk.usage_text(_msg())
    assert "Today: 50.0%" in text
    assert "2031-05-15 00:00 UTC" in text and "in 14 h" in text
    assert "week" not in text.lower()  # unlimited: omitted
    assert "$" not in text and "0.5" not in text

    await desk.record(_msg(), _turn("r2", 900_000))
    assert "Today: 100.0%" in await desk.usage_text(_msg())


async def test_usage_text_with_both_windows_limited(redis: aioredis.Redis, keys: Keys) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=1_000, weekly_micros=4_000))
    await desk.record(_msg(), _turn("r1", 1_000))
    text = await desk.usage_text(_msg())
    assert "Today: 100.0%" in text
    assert "This week: 25.0%" in text and "Monday 2031-05-19 00:00 UTC" in text


async def test_an_override_replaces_the_configured_limit_for_one_user(
    redis: aioredis.Redis, keys: Keys
) -> None:
    desk = _desk(redis, keys, Budget(daily_micros=100))
    await desk.set_limits("telegram", "7", UsageLimits(daily_micros=0))  # unlimited for 7
    await desk.record(_msg("7"), _turn("r1", 500))
    await desk.record(_msg("8"), _turn("r2", 500))
    assert await desk.refusal(_msg("7")) is None
    assert await desk.refusal(_msg("8")) is not None
    report = await desk.report("telegram", "7")
    assert report.daily.overridden and report.daily.limit_micros == 0
