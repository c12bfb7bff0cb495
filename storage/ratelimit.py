"""Per-sender flood protection: a sliding window of message timestamps in a zset.

`sb:rate:{<platform>:<sender>}` holds one member per accepted message (score = ms timestamp from
the server's clock, so every worker slides the same window however far their own clocks drift);
`sb:rate:notice:{<platform>:<sender>}` marks that the sender was already told during this window,
so excess messages get one notice per window, not one each. Both expire with the window; the
shared hash tag keeps them in one Redis Cluster slot, so one script updates both. A message is
counted once: its member is the message's own id, so a redelivery or a twin event (Slack's
message + app_mention) of a message already in the window is let through uncounted.
"""

from __future__ import annotations

import secrets

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from storage.scripts import ScriptCall
from switchboard.state import RateDecision

__all__ = ["RateDecision", "RateLimiter", "decision"]

_HIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then return 1 end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 1
end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', window) then return 2 end
return 3
"""


class RateLimiter:
    def __init__(
        self, client: redis.Redis, *, keys: Keys, limit: int = 20, window_s: float = 60.0
    ) -> None:
        self._r = client
        self._keys = keys
        self.limit = limit
        self.window_s = window_s
        self._hit = client.register_script(_HIT)

    async def hit(
        self, platform: str, sender_id: str, message_id: str | None = None
    ) -> RateDecision:
        """Count one message from the sender; ALLOW while under `limit` in the last `window_s`.
        `message_id` (the message's own id) makes the hit idempotent; None counts every call."""
        call = self.hit_call(platform, sender_id, message_id)
        with redis_errors("rate limit"):
            code = await self._hit(keys=call.keys, args=call.args)
        return decision(code)

    def hit_call(self, platform: str, sender_id: str, message_id: str | None = None) -> ScriptCall:
        """`hit` as a script call, to run in one round trip with others (`storage.scripts`)."""
        return ScriptCall(
            self._hit,
            [self._keys.rate(platform, sender_id), self._keys.rate_notice(platform, sender_id)],
            [
                max(1, round(self.window_s * 1000)),
                self.limit,
                f"m:{message_id}" if message_id is not None else secrets.token_hex(8),
            ],
        )


def decision(code: object) -> RateDecision:
    """The hit script's reply as a decision."""
    number = int(code) if isinstance(code, int | str | bytes) else 0
    return {1: RateDecision.ALLOW, 2: RateDecision.NOTIFY}.get(number, RateDecision.SILENT)
