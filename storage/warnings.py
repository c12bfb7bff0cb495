"""Loop-detection warnings waiting for the next model request of one (thread, run).

`sb:{thread}:warn:<run_id>` is a list of warning texts (newest last, at most 4, no exact
duplicates); `sb:{thread}:warnruns` is the set of run ids with a list, so "clear the other runs"
needs no SCAN. Both carry a 1 h TTL as a backstop for crashed runs.

A global index (`sb:warn:index`, zset of list keys scored by last touch) caps how many lists exist
at once; past the cap the least recently touched lists are evicted, never the one just written. The
index is updated by its own script and victims are deleted by key, so no script spans two cluster
slots. Scores are server-clock microseconds (`TIME`), so workers with skewed clocks agree on "least
recently". The index is touched before the list is written (so it is not written while it still has
an old, possibly oldest, score that a concurrent add elsewhere could evict) and again after (so a
list evicted in between is back in the index: every list stays under the cap).
"""

from __future__ import annotations

import redis.asyncio as redis
from redis.exceptions import RedisError

from storage.keys import Keys
from switchboard.errors import StorageError

__all__ = ["WARNINGS_MAX_KEYS", "WARNINGS_PER_RUN", "WARNINGS_TTL_S", "PendingWarnings"]

WARNINGS_PER_RUN = 4
WARNINGS_TTL_S = 3600  # A run lasts minutes; the backstop only catches runs whose worker died.
WARNINGS_MAX_KEYS = 10_000  # Bounds memory if many runs die without draining.

_ADD = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
for _, v in ipairs(items) do
  if v == ARGV[1] then
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    return 0
  end
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('SADD', KEYS[2], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""
_TOUCH_INDEX = """
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], t[1] .. string.format('%06d', tonumber(t[2])), ARGV[1])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if excess <= 0 then return {} end
local oldest = redis.call('ZRANGE', KEYS[1], 0, excess)
local victims = {}
for _, member in ipairs(oldest) do
  if member ~= ARGV[1] and #victims < excess then
    table.insert(victims, member)
  end
end
if #victims > 0 then redis.call('ZREM', KEYS[1], unpack(victims)) end
return victims
"""
_DRAIN = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return items
"""
_CLEAR_OTHERS = """
local runs = redis.call('SMEMBERS', KEYS[1])
local cleared = {}
for _, run in ipairs(runs) do
  if run ~= ARGV[1] then
    local key = ARGV[2] .. run
    redis.call('DEL', key)
    redis.call('SREM', KEYS[1], run)
    table.insert(cleared, key)
  end
end
return cleared
"""


class PendingWarnings:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        per_run: int = WARNINGS_PER_RUN,
        ttl_s: int = WARNINGS_TTL_S,
        max_keys: int = WARNINGS_MAX_KEYS,
    ) -> None:
        self._r = client
        self._keys = keys
        self._per_run = per_run
        self._ttl = ttl_s
        self._max_keys = max_keys
        self._add = client.register_script(_ADD)
        self._touch = client.register_script(_TOUCH_INDEX)
        self._drain = client.register_script(_DRAIN)
        self._clear_others = client.register_script(_CLEAR_OTHERS)

    async def add(self, thread_id: str, run_id: str, text: str) -> bool:
        """Queue a warning for the run's next model call; False if the same text is already queued."""
        key = self._keys.warnings(thread_id, run_id)
        try:
            await self._touch_index(key)
            added = await self._add(
                keys=[key, self._keys.warning_runs(thread_id)],
                args=[text, self._per_run, self._ttl, run_id],
            )
            await self._touch_index(key)
        except RedisError as exc:
            raise StorageError(f"warning add failed: {exc.__class__.__name__}") from None
        return bool(added)

    async def _touch_index(self, key: str) -> None:
        """Mark `key` as just used and delete the lists evicted to stay under the cap."""
        victims = await self._touch(keys=[self._keys.warnings_index()], args=[key, self._max_keys])
        if victims:
            await self._r.delete(*victims)

    async def drain(self, thread_id: str, run_id: str) -> list[str]:
        """Return and delete the run's warnings in one step, so each is delivered once."""
        key = self._keys.warnings(thread_id, run_id)
        try:
            items = await self._drain(keys=[key, self._keys.warning_runs(thread_id)], args=[run_id])
            if items:
                await self._r.zrem(self._keys.warnings_index(), key)
        except RedisError as exc:
            raise StorageError(f"warning drain failed: {exc.__class__.__name__}") from None
        return [i.decode() if isinstance(i, bytes) else str(i) for i in items]

    async def peek(self, thread_id: str, run_id: str) -> list[str]:
        try:
            items = await self._r.lrange(self._keys.warnings(thread_id, run_id), 0, -1)
        except RedisError as exc:
            raise StorageError(f"warning read failed: {exc.__class__.__name__}") from None
        return [i.decode() for i in items]

    async def clear_run(self, thread_id: str, run_id: str) -> None:
        await self.drain(thread_id, run_id)

    async def clear_other_runs(self, thread_id: str, keep_run_id: str) -> None:
        """At run start: warnings left by earlier (crashed or stopped) runs must never leak in."""
        try:
            cleared = await self._clear_others(
                keys=[self._keys.warning_runs(thread_id)],
                args=[keep_run_id, self._keys.warnings(thread_id, "")],
            )
            if cleared:
                await self._r.zrem(self._keys.warnings_index(), *cleared)
        except RedisError as exc:
            raise StorageError(f"warning clear failed: {exc.__class__.__name__}") from None
