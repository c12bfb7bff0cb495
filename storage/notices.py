"""Once-per-window notices: tell a chat something at most once per `NOTICE_TTL_S`.

`sb:notice:<platform>:<chat_id>` is `"1"` with the window as TTL; `SET NX EX` decides who speaks,
so several workers seeing messages from the same unlinked chat still post one notice.
"""

from __future__ import annotations

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys

__all__ = ["NOTICE_TTL_S", "NoticeLimiter"]

NOTICE_TTL_S = 3600  # An unlinked chat hears "not linked" once an hour, not on every message.


class NoticeLimiter:
    def __init__(self, client: redis.Redis, *, keys: Keys, ttl_s: int = NOTICE_TTL_S) -> None:
        self._r = client
        self._keys = keys
        self.ttl_s = ttl_s

    async def claim(self, platform: str, chat_id: str) -> bool:
        """True if this chat may be told now (and marks it told for the window)."""
        with redis_errors("notice claim"):
            return bool(
                await self._r.set(
                    self._keys.notice(platform, chat_id), b"1", nx=True, ex=self.ttl_s
                )
            )
