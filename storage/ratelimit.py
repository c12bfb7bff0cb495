"""Per-sender flood protection: a sliding window of message timestamps in a zset.

`sb:rate:{<platform>:<sender>}` holds one member per accepted message (score = ms timestamp from
the server's clock, so every worker slides the same window however far their own clocks drift);
`sb:rate:notice:{<platform>:<sender>}` marks that the sender was already told during this window,
so excess messages get one notice per window, not one each. Both expire with the window; the
shared hash tag keeps them in one Redis Cluster slot, so one script updates both.
"""

from __future__ import annotations

import secrets

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from switchboard.state import RateDecision

__all__ = ["RateDecision", "RateLimiter"]

_HIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
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

    async def hit(self, platform: str, sender_id: str) -> RateDecision:
        """Count one message from the sender; ALLOW while under `limit` in the last `window_s`."""
        with redis_errors("rate limit"):
            code = await self._hit(
                keys=[
                    self._keys.rate(platform, sender_id),
                    self._keys.rate_notice(platform, sender_id),
                ],
                args=[max(1, round(self.window_s * 1000)), self.limit, secrets.token_hex(8)],
            )
        return {1: RateDecision.ALLOW, 2: RateDecision.NOTIFY}.get(int(code), RateDecision.SILENT)
