"""Per-user model spend in microdollars, per UTC day and per ISO week, plus admin overrides.

Keys (all under the user's hash tag `{<platform>:<user_id>}`, so one script may touch them all in
Redis Cluster):

- `...:day:<YYYY-MM-DD>` and `...:week:<YYYY>-W<ww>`: integer microdollars (`INCRBY`), expiring
  at the window's end (`EXPIREAT` next 00:00 UTC / next Monday 00:00 UTC). The window id is in the
  key, so a reader never sees last window's total even if an expiry were late.
- `...:turn:<turn_id>`: `"1"` for `TURN_MARK_TTL_S`: the turn was already counted. redis-py resends
  a command after a connection error; when the first attempt ran but its reply was lost, the
  resend finds the mark and counts nothing, so a turn is charged exactly once.
- `...:limits`: hash `{daily, weekly}` of microdollars set by the admin (field absent = the
  configured default, `0` = unlimited for this user); no TTL.
- `...:notice:<chat_id>:<window id>`: `"1"` until the window ends: this user was told in this chat
  that the window is spent, so the notice goes out once per window, not on every message.

Times come from the caller's clock (injectable), because the window a turn belongs to is decided
once, client-side, and a resent command must name the same keys as the first attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys

if TYPE_CHECKING:
    from redis.typing import EncodableT, FieldT

__all__ = [
    "TURN_MARK_TTL_S",
    "Spender",
    "UsageLedger",
    "UsageLimits",
    "UsageSnapshot",
    "Window",
    "WindowKind",
    "windows_at",
]

# A lost reply is resent within seconds (redis-py's retry backoff); an hour covers any reconnect.
TURN_MARK_TTL_S = 3600

_RECORD = """
if not redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[4]) then return 0 end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIREAT', KEYS[1], ARGV[2])
redis.call('INCRBY', KEYS[2], ARGV[1])
redis.call('EXPIREAT', KEYS[2], ARGV[3])
return 1
"""


class WindowKind(StrEnum):
    DAILY = "daily"
    WEEKLY = "weekly"


@dataclass(frozen=True, slots=True)
class Window:
    """One budget window: `[start, end)` in epoch seconds, named by `id` (part of its key)."""

    kind: WindowKind
    id: str
    start: float
    end: float

    def seconds_left(self, now: float) -> float:
        return max(0.0, self.end - now)


def windows_at(now: float) -> tuple[Window, Window]:
    """The daily window (UTC day) and weekly window (ISO week from Monday 00:00 UTC) of `now`."""
    moment = datetime.fromtimestamp(now, tz=UTC)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    monday = day - timedelta(days=day.weekday())
    year, week, _ = day.isocalendar()
    return (
        Window(
            WindowKind.DAILY,
            day.strftime("%Y-%m-%d"),
            day.timestamp(),
            (day + timedelta(days=1)).timestamp(),
        ),
        Window(
            WindowKind.WEEKLY,
            f"{year:04d}-W{week:02d}",
            monday.timestamp(),
            (monday + timedelta(days=7)).timestamp(),
        ),
    )


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """An admin's per-user override in microdollars; None = the configured default."""

    daily_micros: int | None = None
    weekly_micros: int | None = None


@dataclass(frozen=True, slots=True)
class Spender:
    platform: str
    user_id: str
    week_micros: int  # spent this ISO week


@dataclass(frozen=True, slots=True)
class UsageSnapshot:
    """One user's spend in the current windows and their override, read in one round trip."""

    daily_micros: int
    weekly_micros: int
    daily: Window
    weekly: Window
    override: UsageLimits


class UsageLedger:
    """Spend counters per (platform, user): record a turn's cost, read, reset, override limits."""

    def __init__(
        self, client: redis.Redis, *, keys: Keys, clock: Callable[[], float] = time.time
    ) -> None:
        self._r = client
        self._keys = keys
        self._clock = clock
        self._record = client.register_script(_RECORD)

    def now(self) -> float:
        return self._clock()

    async def record(self, platform: str, user_id: str, turn_id: str, micros: int) -> bool:
        """Add one turn's cost to both windows; True if counted. Zero or negative cost writes
        nothing; a turn id seen before (a resend) counts nothing."""
        if micros <= 0:
            return False
        daily, weekly = windows_at(self.now())
        with redis_errors("usage record"):
            counted = await self._record(
                keys=[
                    self._keys.usage_day(platform, user_id, daily.id),
                    self._keys.usage_week(platform, user_id, weekly.id),
                    self._keys.usage_turn(platform, user_id, turn_id),
                ],
                args=[int(micros), int(daily.end), int(weekly.end), TURN_MARK_TTL_S],
            )
        return bool(counted)

    async def snapshot(self, platform: str, user_id: str) -> UsageSnapshot:
        daily, weekly = windows_at(self.now())
        with redis_errors("usage read"):
            async with self._r.pipeline(transaction=True) as pipe:
                pipe.get(self._keys.usage_day(platform, user_id, daily.id))
                pipe.get(self._keys.usage_week(platform, user_id, weekly.id))
                pipe.hmget(self._keys.usage_limits(platform, user_id), ["daily", "weekly"])
                day_raw, week_raw, (day_limit, week_limit) = await pipe.execute()
        return UsageSnapshot(
            daily_micros=_int(day_raw) or 0,
            weekly_micros=_int(week_raw) or 0,
            daily=daily,
            weekly=weekly,
            override=UsageLimits(_int(day_limit), _int(week_limit)),
        )

    async def top_spenders(self, *, limit: int = 20, scan_most: int = 5000) -> list[Spender]:
        """This week's biggest spenders, for an operator (nothing is written per turn for it):
        the week keys are found by SCAN (every node of a cluster), at most `scan_most` of
        them, so on a larger store this is the top of a sample."""
        _, weekly = windows_at(self.now())
        pattern = self._keys.usage("*", "*", f"week:{weekly.id}")  # braces are literal in a glob
        head, tail = pattern.split("{*:*}")
        with redis_errors("usage list"):
            found: list[str] = []
            async for key in self._r.scan_iter(match=pattern, count=1000):
                found.append(key.decode() if isinstance(key, bytes) else key)
                if len(found) >= scan_most:
                    break
            values: list[bytes | None] = []  # GET replies
            for start in range(0, len(found), 500):
                async with self._r.pipeline(transaction=False) as pipe:
                    for key in found[start : start + 500]:
                        pipe.get(key)
                    values.extend(await pipe.execute())
        spenders = []
        for key, raw in zip(found, values, strict=True):
            platform, _, user_id = key[len(head) + 1 : -len(tail) - 1].partition(":")
            micros = _int(raw)
            if micros and user_id:
                spenders.append(Spender(platform, user_id, micros))
        return sorted(spenders, key=lambda s: s.week_micros, reverse=True)[:limit]

    async def reset(self, platform: str, user_id: str, *, weekly: bool = False) -> None:
        """Forget the current day's spend; the week's too only when asked, so a daily reset
        still leaves the weekly budget in force."""
        daily_w, weekly_w = windows_at(self.now())
        doomed = [self._keys.usage_day(platform, user_id, daily_w.id)]
        if weekly:
            doomed.append(self._keys.usage_week(platform, user_id, weekly_w.id))
        with redis_errors("usage reset"):
            await self._r.delete(*doomed)

    async def set_limits(self, platform: str, user_id: str, limits: UsageLimits) -> None:
        """Replace the user's override; a None field falls back to the configured default."""
        key = self._keys.usage_limits(platform, user_id)
        fields = {"daily": limits.daily_micros, "weekly": limits.weekly_micros}
        kept: dict[FieldT, EncodableT] = {
            name: str(int(v)) for name, v in fields.items() if v is not None
        }
        with redis_errors("usage limits update"):
            async with self._r.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                if kept:
                    pipe.hset(key, mapping=kept)
                await pipe.execute()

    async def claim_notice(self, platform: str, user_id: str, chat_id: str, window: Window) -> bool:
        """True the first time in `window` that this user is told in this chat (then marked)."""
        key = self._keys.usage_notice(platform, user_id, chat_id, f"{window.kind}:{window.id}")
        with redis_errors("usage notice claim"):
            return bool(await self._r.set(key, b"1", nx=True, exat=int(window.end)))


def _int(raw: bytes | str | None) -> int | None:
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None
