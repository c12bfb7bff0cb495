"""Threads whose queued messages wait on a lock holder, checked by a sweeper once they are due.

`sb:orphans` is a zset: member = thread id, score = when to check (unix s, in Redis's clock like
the leases, so workers whose clocks disagree neither sweep early nor starve a thread: `watch`
scores with the server's `TIME` and `due` reads up to it, each in one script). A message that joins
a busy thread's queue adds its thread, due a lock TTL later. A live holder answers the queue
long before that; if the holder died (or its last step failed), the sweeper finds the thread due,
takes the free lock and answers the queue, so no queued message waits for a new message to come.
A thread leaves the index only when the sweeper saw its queue empty, and only if no message
re-added it meanwhile (the score is compared in the same script).

With `shards` > 1 the index is split like the inbox (`shards.py`): `sb:orphans:{<tag>}`, a
thread in the shard of its id, so no one zset is every worker's hot key. `due` reads every shard
(and those of other shard counts announced, so a changed count loses no mark) in one pipeline;
`forget` drops the thread from its shard in each layout.
"""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from storage.shards import LEARN_EVERY_S, Layout, others

__all__ = ["Orphans"]

# KEYS: the shard's zset. ARGV: thread id, seconds from now (the server's now).
_WATCH = """
local t = redis.call('TIME')
local due = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'GT', string.format('%.6f', due), ARGV[1])
return 1
"""

# KEYS: the shard's zset. ARGV: the most to return. The threads due by the server's now.
_DUE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now),
  'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
"""

_FORGET = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) <= tonumber(ARGV[2]) then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1
"""


class Orphans:
    def __init__(self, client: redis.Redis, *, keys: Keys, grace_s: float, shards: int = 1) -> None:
        self._r = client
        self._keys = keys
        self.layout = Layout(shards)
        self.grace_s = grace_s
        self._forget = client.register_script(_FORGET)
        self._watch = client.register_script(_WATCH)
        self._due = client.register_script(_DUE)
        self._layouts: tuple[Layout, ...] = (
            self.layout,
        )  # this one first, then those being drained
        self._learn_at = 0.0  # when to read the announced layouts again (monotonic)

    async def watch(self, thread_id: str, after_s: float | None = None) -> None:
        """Check this thread `after_s` (default `grace_s`) from now, later if already due
        later: a failed batch's backoff is never cut short by a message queueing behind it."""
        after = self.grace_s if after_s is None else after_s
        key = self._keys.orphans(self.layout.tag_for(thread_id))
        with redis_errors("orphan watch"):
            await self._watch(keys=[key], args=[thread_id, repr(after)])

    async def due(self, limit: int = 50) -> list[tuple[str, float]]:
        """Threads due for a check, with the score seen (pass it back to `forget`), at most
        `limit` from each shard."""
        with redis_errors("orphan scan"):
            if time.monotonic() >= self._learn_at:  # a first call, then every few seconds
                members = await self._r.smembers(self._keys.inbox_layouts())
                self._learn_at = time.monotonic() + LEARN_EVERY_S
                counts = others(members, self.layout.count)
                self._layouts = (self.layout, *(Layout(n) for n in counts))
            keys = [self._keys.orphans(t) for layout in self._layouts for t in layout.tags]
            shards = await asyncio.gather(*(self._due(keys=[key], args=[limit]) for key in keys))
        seen: dict[str, float] = {}
        for rows in shards:
            for t, s in zip(rows[::2], rows[1::2], strict=True):
                thread_id = t.decode() if isinstance(t, bytes) else t
                seen[thread_id] = max(float(s), seen.get(thread_id, float("-inf")))
        return list(seen.items())

    async def forget(self, thread_id: str, seen: float) -> None:
        """Drop the thread unless a new message re-armed it after `seen` (in each layout)."""
        keys = {self._keys.orphans(layout.tag_for(thread_id)) for layout in self._layouts}
        with redis_errors("orphan forget"):
            await asyncio.gather(
                *(self._forget(keys=[key], args=[thread_id, repr(seen)]) for key in keys)
            )
