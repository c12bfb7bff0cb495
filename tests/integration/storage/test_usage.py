"""UsageLedger on real Redis: windows, expiries at window ends, idempotent recording, resets,
overrides, once-per-window notices."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from urllib.parse import urlparse

import pytest
import redis.asyncio as aioredis

from storage import Keys, UsageLedger, UsageLimits, connect, windows_at

# Wednesday 2031-05-14 10:30 UTC: in the future, so EXPIREAT at the window ends keeps the keys.
WED = datetime(2031, 5, 14, 10, 30, tzinfo=UTC).timestamp()
THU_MIDNIGHT = datetime(2031, 5, 15, tzinfo=UTC).timestamp()
NEXT_MONDAY = datetime(2031, 5, 19, tzinfo=UTC).timestamp()


@pytest.fixture
def ledger(redis: aioredis.Redis, keys: Keys) -> UsageLedger:
    return UsageLedger(redis, keys=keys, clock=lambda: WED)


async def test_recording_adds_to_both_windows_which_expire_at_their_ends(
    ledger: UsageLedger, redis: aioredis.Redis, keys: Keys
) -> None:
    assert await ledger.record("telegram", "42", "turn-1", 1_500)
    assert await ledger.record("telegram", "42", "turn-2", 500)

    snap = await ledger.snapshot("telegram", "42")
    assert (snap.daily_micros, snap.weekly_micros) == (2_000, 2_000)
    assert snap.daily.end == THU_MIDNIGHT and snap.weekly.end == NEXT_MONDAY
    day_key = keys.usage_day("telegram", "42", "2031-05-14")
    week_key = keys.usage_week("telegram", "42", "2031-W20")
    assert await redis.expiretime(day_key) == int(THU_MIDNIGHT)
    assert await redis.expiretime(week_key) == int(NEXT_MONDAY)


async def test_the_same_turn_is_counted_once(ledger: UsageLedger) -> None:
    assert await ledger.record("slack", "U1", "turn-1", 700)
    assert not await ledger.record("slack", "U1", "turn-1", 700)
    assert (await ledger.snapshot("slack", "U1")).daily_micros == 700


@pytest.mark.parametrize("micros", [0, -5])
async def test_zero_or_negative_cost_writes_nothing(
    ledger: UsageLedger, redis: aioredis.Redis, prefix: str, micros: int
) -> None:
    assert not await ledger.record("slack", "U1", "turn-1", micros)
    assert await redis.keys(f"{prefix}*") == []


async def test_users_and_platforms_are_counted_apart(ledger: UsageLedger) -> None:
    await ledger.record("telegram", "42", "t1", 100)
    await ledger.record("discord", "42", "t2", 200)
    assert (await ledger.snapshot("telegram", "42")).daily_micros == 100
    assert (await ledger.snapshot("discord", "42")).daily_micros == 200
    assert (await ledger.snapshot("telegram", "43")).daily_micros == 0


async def test_a_new_day_starts_from_zero_but_the_week_keeps_counting(
    redis: aioredis.Redis, keys: Keys
) -> None:
    now = [WED]
    ledger = UsageLedger(redis, keys=keys, clock=lambda: now[0])
    await ledger.record("telegram", "42", "t1", 300)
    now[0] = THU_MIDNIGHT + 60
    await ledger.record("telegram", "42", "t2", 200)
    snap = await ledger.snapshot("telegram", "42")
    assert (snap.daily_micros, snap.weekly_micros) == (200, 500)


async def test_reset_clears_the_day_only_unless_the_week_is_asked_for(
    ledger: UsageLedger,
) -> None:
    await ledger.record("telegram", "42", "t1", 900)
    await ledger.reset("telegram", "42")
    snap = await ledger.snapshot("telegram", "42")
    assert (snap.daily_micros, snap.weekly_micros) == (0, 900)

    await ledger.reset("telegram", "42", weekly=True)
    snap = await ledger.snapshot("telegram", "42")
    assert (snap.daily_micros, snap.weekly_micros) == (0, 0)


async def test_overrides_are_set_replaced_and_cleared(ledger: UsageLedger) -> None:
    assert (await ledger.snapshot("slack", "U1")).override == UsageLimits()
    await ledger.set_limits("slack", "U1", UsageLimits(daily_micros=5_000_000))
    assert (await ledger.snapshot("slack", "U1")).override == UsageLimits(5_000_000, None)
    await ledger.set_limits("slack", "U1", UsageLimits(weekly_micros=0))
    assert (await ledger.snapshot("slack", "U1")).override == UsageLimits(None, 0)
    await ledger.set_limits("slack", "U1", UsageLimits())
    assert (await ledger.snapshot("slack", "U1")).override == UsageLimits()


async def test_a_notice_is_claimed_once_per_window_and_chat(
    ledger: UsageLedger, redis: aioredis.Redis, keys: Keys
) -> None:
    daily, weekly = windows_at(WED)
    assert await ledger.claim_notice("telegram", "42", "chat-1", daily)
    assert not await ledger.claim_notice("telegram", "42", "chat-1", daily)
    assert await ledger.claim_notice("telegram", "42", "chat-2", daily)
    assert await ledger.claim_notice("telegram", "42", "chat-1", weekly)
    key = keys.usage_notice("telegram", "42", "chat-1", f"daily:{daily.id}")
    assert await redis.expiretime(key) == int(THU_MIDNIGHT)


class _ReplyDropper:
    """A TCP proxy on loopback that swallows the reply to the first command naming `marker`
    and then cuts the connection: the command ran on the server, the client never heard."""

    def __init__(self, upstream: tuple[str, int], marker: bytes) -> None:
        self._upstream = upstream
        self._marker = marker
        self.dropped = 0
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        armed = asyncio.Event()

        async def client_to_server() -> None:
            while data := await reader.read(65536):
                if self.dropped == 0 and self._marker in data:
                    armed.set()
                up_writer.write(data)
                await up_writer.drain()

        async def server_to_client() -> None:
            while data := await up_reader.read(65536):
                if armed.is_set() and self.dropped == 0:
                    self.dropped += 1
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        tasks = [asyncio.create_task(client_to_server()), asyncio.create_task(server_to_client())]
        with contextlib.suppress(Exception):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in (writer, up_writer):
            w.close()


@pytest.fixture
async def dropper(redis_url: str) -> AsyncIterator[_ReplyDropper]:
    url = urlparse(redis_url)
    proxy = _ReplyDropper((url.hostname or "127.0.0.1", url.port or 6379), b":turn:lost-1")
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()


async def test_a_resend_after_a_lost_reply_does_not_count_twice(
    dropper: _ReplyDropper, redis: aioredis.Redis, keys: Keys
) -> None:
    client = connect(f"redis://127.0.0.1:{dropper.port}/0")
    try:
        ledger = UsageLedger(client, keys=keys, clock=lambda: WED)
        await ledger.snapshot("telegram", "42")  # warm the connection before the fault
        await ledger.record("telegram", "42", "lost-1", 1_000)
    finally:
        await client.aclose()
    assert dropper.dropped == 1  # the first reply really was lost and redis-py resent
    direct = UsageLedger(redis, keys=keys, clock=lambda: WED)
    snap = await direct.snapshot("telegram", "42")
    assert (snap.daily_micros, snap.weekly_micros) == (1_000, 1_000)


async def test_top_spenders_are_this_weeks_biggest_first(ledger: UsageLedger) -> None:
    await ledger.record("telegram", "42", "t1", 1_500)
    await ledger.record("slack", "U:1", "t2", 9_000)  # a colon in the user id survives
    await ledger.record("discord", "7", "t3", 300)
    top = await ledger.top_spenders(limit=2)
    assert [(s.platform, s.user_id, s.week_micros) for s in top] == [
        ("slack", "U:1", 9_000),
        ("telegram", "42", 1_500),
    ]
    await ledger.reset("slack", "U:1", weekly=True)
    assert [s.user_id for s in await ledger.top_spenders()] == ["42", "7"]
