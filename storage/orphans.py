"""Threads whose queued messages wait on a lock holder, checked by a sweeper once they are due.

`sb:orphans` is a zset: member = thread id, score = when to check (unix s). A message that joins
a busy thread's queue adds its thread, due a lock TTL later. A live holder answers the queue
long before that; if the holder died (or its last step failed), the sweeper finds the thread due,
takes the free lock and answers the queue, so no queued message waits for a new message to come.
A thread leaves the index only when the sweeper saw its queue empty, and only if no message
re-added it meanwhile (the score is compared in the same script).
"""

from __future__ import annotations

import time

import redis.asyncio as redis
from redis.exceptions import RedisError

from storage.failures import storage_error
from storage.keys import Keys

__all__ = ["Orphans"]

_FORGET = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) <= tonumber(ARGV[2]) then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1
"""


class Orphans:
    def __init__(self, client: redis.Redis, *, keys: Keys, grace_s: float) -> None:
        self._r = client
        self._key = keys.orphans()
        self.grace_s = grace_s
        self._forget = client.register_script(_FORGET)

    async def watch(self, thread_id: str, after_s: float | None = None) -> None:
        """Check this thread `after_s` (default `grace_s`) from now, later if already due
        later: a failed batch's backoff is never cut short by a message queueing behind it."""
        due = time.time() + (self.grace_s if after_s is None else after_s)
        try:
            await self._r.zadd(self._key, {thread_id: due}, gt=True)
        except RedisError as exc:
            raise storage_error("orphan watch", exc) from None

    async def due(self, limit: int = 50) -> list[tuple[str, float]]:
        """Threads due for a check, with the score seen (pass it back to `forget`)."""
        try:
            rows = await self._r.zrangebyscore(
                self._key, "-inf", time.time(), start=0, num=limit, withscores=True
            )
        except RedisError as exc:
            raise storage_error("orphan scan", exc) from None
        return [(t.decode() if isinstance(t, bytes) else t, float(s)) for t, s in rows]

    async def forget(self, thread_id: str, seen: float) -> None:
        """Drop the thread unless a new message re-armed it after `seen`."""
        try:
            await self._forget(keys=[self._key], args=[thread_id, repr(seen)])
        except RedisError as exc:
            raise storage_error("orphan forget", exc) from None
