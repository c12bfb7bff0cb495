"""Claim a provider event id once, so platform retries and dual deliveries get one reply.

Value: `"1"`. The 24 h TTL outlives every platform's redelivery window (Slack retries for ~1 h,
Telegram keeps unconfirmed updates for 24 h).
"""

from __future__ import annotations

import redis.asyncio as redis
from redis.exceptions import RedisError

from storage.keys import Keys
from switchboard.errors import StorageError

__all__ = ["DEDUPE_TTL_S", "Dedupe"]

DEDUPE_TTL_S = 24 * 3600  # Telegram keeps undelivered updates for 24 h; the longest retry window.


_CLAIM_SCOPED = """
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call('SET', key, '1', 'EX', ARGV[1])
end
return 1
"""


class Dedupe:
    def __init__(self, client: redis.Redis, *, keys: Keys, ttl_s: int = DEDUPE_TTL_S) -> None:
        self._r = client
        self._keys = keys
        self._ttl = ttl_s
        self._claim_scoped = client.register_script(_CLAIM_SCOPED)

    async def claim(self, platform: str, provider_id: str) -> bool:
        """True for the first claim of this id; False for every later one within the TTL."""
        try:
            return bool(
                await self._r.set(
                    self._keys.dedupe(platform, provider_id), b"1", nx=True, ex=self._ttl
                )
            )
        except RedisError as exc:
            raise StorageError(f"dedupe claim failed: {exc.__class__.__name__}") from None

    async def claim_all(self, platform: str, provider_ids: list[str], *, scope: str = "") -> bool:
        """Claim several ids for one event (e.g. update id and chat+message id).

        The event is new only if every id is new. With a `scope` (the chat the message is in) the
        ids share a hash slot and one script claims all or none: one round trip, and concurrent
        deliveries sharing any id agree on exactly one winner. Without a scope, ids are claimed
        one at a time in sorted order, stopping at the first one already taken, which gives the
        same guarantee across slots. A repeated id counts once.
        """
        if scope:
            unique = sorted(set(provider_ids))
            try:
                won = await self._claim_scoped(
                    keys=[self._keys.dedupe(platform, pid, scope) for pid in unique],
                    args=[self._ttl],
                )
            except RedisError as exc:
                raise StorageError(f"dedupe claim failed: {exc.__class__.__name__}") from None
            return bool(won)
        try:
            for pid in sorted(set(provider_ids)):
                if not await self._r.set(
                    self._keys.dedupe(platform, pid), b"1", nx=True, ex=self._ttl
                ):
                    return False
        except RedisError as exc:
            raise StorageError(f"dedupe claim failed: {exc.__class__.__name__}") from None
        return True

    async def release(self, platform: str, provider_id: str) -> None:
        """Give an id back when handling failed before anything was sent, so a retry is served."""
        try:
            await self._r.delete(self._keys.dedupe(platform, provider_id))
        except RedisError as exc:
            raise StorageError(f"dedupe release failed: {exc.__class__.__name__}") from None
