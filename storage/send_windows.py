"""Send budgets shared by every process: sliding windows of reserved send times in Redis.

A platform limits a bot as a whole, not a process (Telegram: about 30 messages per second per bot,
one per second per private chat, 20 per minute per group; Slack: about one message a second per
channel, 50 `chat.update`s a minute per workspace; Discord: 5 messages or edits per 5 s per
channel, 50 requests a second per bot), so a fleet must count together. Each window is a zset
`sb:pace:{<owner>}:<scope>` of reservation ids scored by the time (ms) they may send; `reserve`
books the earliest time that fits every window it is given, in one script, and returns how long
the caller waits. All windows of one owner share the `{<owner>}` hash tag. A reservation id
makes a resend after a lost reply book nothing twice. A platform's 429 is told to the whole
fleet with `hold`: placeholder members (`hold:<n>`) fill the windows until its retry-after ends.

| key                          | type | value                                        | TTL              |
|------------------------------|------|----------------------------------------------|------------------|
| `sb:pace:{<owner>}:<scope>`  | zset | reservation id → send time (ms, Redis clock) | the window, slid |

| owner                        | scopes                                                      |
|------------------------------|-------------------------------------------------------------|
| `tg:<bot id>`                | `all` (the bot), `c:<chat id>`                              |
| `slack:<token digest>`       | `c:<channel id>`, `update:<team id>` (`chat.update`)        |
| `discord:<token digest>`     | `all` (the bot), `c:<channel id>`                           |

A Slack or Discord owner is the first 16 hex digits of the bot token's SHA-256: one app
installation or bot, named without its token.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys

if TYPE_CHECKING:
    from redis.typing import EncodableT

__all__ = ["SendWindow", "SendWindows"]

# Every score is in Redis's clock (`TIME`), as the leases are: workers whose clocks disagree
# still share one window. KEYS: one zset per window. ARGV: reservation id, most ms the caller
# would wait (-1: any), then (limit, window_ms) per key. Returns the wait in ms, or -1 when it
# would exceed the most (then nothing is booked).
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local most = tonumber(ARGV[2])
local at = now
for i, key in ipairs(KEYS) do
  local limit, span = tonumber(ARGV[1 + 2 * i]), tonumber(ARGV[2 + 2 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - span)
  local mine = redis.call('ZSCORE', key, ARGV[1])
  if mine then return tonumber(mine) - now end
  if redis.call('ZCARD', key) >= limit then
    local edge = redis.call('ZRANGE', key, -limit, -limit, 'WITHSCORES')
    at = math.max(at, tonumber(edge[2]) + span)
  end
end
if most >= 0 and at - now > most then return -1 end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, at, ARGV[1])
  redis.call('PEXPIRE', key, at - now + tonumber(ARGV[2 + 2 * i]))
end
return at - now
"""

# A platform's 429 ("retry after N s"), told to the whole fleet: `limit` placeholder bookings
# scored so that the window is full until the hold ends (ZADD GT: a shorter hold never shortens
# a longer one). KEYS: one zset per window. ARGV: hold_ms, then (limit, window_ms).
_HOLD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local hold = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  local limit, span = tonumber(ARGV[2 * i]), tonumber(ARGV[1 + 2 * i])
  for j = 1, limit do
    redis.call('ZADD', key, 'GT', now + hold - span, 'hold:' .. j)
  end
  if redis.call('PTTL', key) < hold then redis.call('PEXPIRE', key, hold) end
end
return 1
"""


@dataclass(frozen=True, slots=True)
class SendWindow:
    scope: str  # e.g. "all" for the bot, "c:<chat id>" for one chat (table above)
    limit: int
    seconds: float


class SendWindows:
    def __init__(self, client: redis.Redis, *, keys: Keys, owner: str) -> None:
        """`owner` names the limited party (`tg:<bot id>`, ...): the hash tag of its windows."""
        self._keys = keys
        self._owner = owner
        self._reserve = client.register_script(_RESERVE)
        self._hold = client.register_script(_HOLD)

    async def reserve(
        self, windows: Sequence[SendWindow], *, most_s: float | None = None
    ) -> float | None:
        """Book one send in every window; seconds to wait before sending. With `most_s`, a
        send that would wait longer books nothing and gets None (a cosmetic update skipped)."""
        most_ms = -1 if most_s is None else int(most_s * 1000)
        args: list[EncodableT] = [secrets.token_hex(8), most_ms]
        for window in windows:
            args += [window.limit, int(window.seconds * 1000)]
        keys = [self._keys.pace(self._owner, w.scope) for w in windows]
        with redis_errors("send budget"):
            delay_ms = await self._reserve(keys=keys, args=args)
        if delay_ms == -1 and most_s is not None:
            return None
        return max(0.0, float(delay_ms) / 1000)

    async def hold(self, windows: Sequence[SendWindow], seconds: float) -> None:
        """No send in these windows, by any process, for `seconds` (a platform's retry-after)."""
        args: list[EncodableT] = [max(1, int(seconds * 1000))]
        for window in windows:
            args += [window.limit, int(window.seconds * 1000)]
        keys = [self._keys.pace(self._owner, w.scope) for w in windows]
        with redis_errors("send hold"):
            await self._hold(keys=keys, args=args)
