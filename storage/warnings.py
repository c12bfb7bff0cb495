"""Loop-detection warnings waiting for the next model request of one (thread, run).

`sb:{thread}:warn` is one hash per thread: field = run id, value = a JSON list of that run's
warning texts (newest last, at most 4, no exact duplicates). Every script names that hash in KEYS
and touches nothing else (Redis Cluster and Redis 7 functions refuse keys a script builds itself),
so "clear the other runs" is HKEYS + HDEL on it. It carries a 1 h TTL, refreshed by every add, as
a backstop for crashed runs.

A global index (`sb:warn:index`, zset scored by last touch) caps how many runs' lists exist at
once; its members name one run's list (`_member`: the hash key and the run id). Past the cap the
least recently touched lists are evicted, never the one just written. The index is updated by its
own script and victims are deleted field by field, so no script spans two cluster slots. Scores
are server-clock microseconds (`TIME`), so workers with skewed clocks agree on "least recently".
The index is touched before the list is written (so it is not written while it still has an old,
possibly oldest, score that a concurrent add elsewhere could evict) and again after (so a list
evicted in between is back in the index: every list stays under the cap).
"""

from __future__ import annotations

import json

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys

__all__ = ["WARNINGS_MAX_KEYS", "WARNINGS_PER_RUN", "WARNINGS_TTL_S", "PendingWarnings"]

WARNINGS_PER_RUN = 4
WARNINGS_TTL_S = 3600  # A run lasts minutes; the backstop only catches runs whose worker died.
WARNINGS_MAX_KEYS = 10_000  # run lists in all; bounds memory if many runs die without draining

# KEYS: the thread's hash. ARGV: run text per_run ttl. 1 if added, 0 for an exact duplicate.
_ADD = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
local items = {}
if raw then items = cjson.decode(raw) end
for _, v in ipairs(items) do
  if v == ARGV[2] then
    redis.call('EXPIRE', KEYS[1], ARGV[4])
    return 0
  end
end
items[#items + 1] = ARGV[2]
while #items > tonumber(ARGV[3]) do table.remove(items, 1) end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(items))
redis.call('EXPIRE', KEYS[1], ARGV[4])
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
# KEYS: the thread's hash. ARGV: run. The run's JSON list (or nil), deleted in the same step.
_DRAIN = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if raw then redis.call('HDEL', KEYS[1], ARGV[1]) end
return raw
"""
# KEYS: the thread's hash. ARGV: the run to keep. The run ids cleared.
_CLEAR_OTHERS = """
local cleared = {}
for _, run in ipairs(redis.call('HKEYS', KEYS[1])) do
  if run ~= ARGV[1] then cleared[#cleared + 1] = run end
end
if #cleared > 0 then redis.call('HDEL', KEYS[1], unpack(cleared)) end
return cleared
"""


def _member(key: str, run_id: str) -> str:
    """The index member of one run's list: unambiguous whatever the ids contain."""
    return json.dumps([key, run_id], separators=(",", ":"))


def _texts(raw: bytes | str | None) -> list[str]:
    if not raw:
        return []
    items = json.loads(raw)
    return [str(i) for i in items] if isinstance(items, list) else []


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
        key = self._keys.pending_warnings(thread_id)
        member = _member(key, run_id)
        with redis_errors("warning add"):
            await self._touch_index(member)
            added = await self._add(keys=[key], args=[run_id, text, self._per_run, self._ttl])
            await self._touch_index(member)
        return bool(added)

    async def _touch_index(self, member: str) -> None:
        """Mark `member` as just used and delete the run lists evicted to stay under the cap."""
        victims = await self._touch(
            keys=[self._keys.warnings_index()], args=[member, self._max_keys]
        )
        if not victims:
            return
        pipe = self._r.pipeline(transaction=False)  # a cluster client splits it by slot
        for victim in victims:
            key, run_id = json.loads(victim)
            pipe.hdel(key, run_id)
        await pipe.execute()

    async def drain(self, thread_id: str, run_id: str) -> list[str]:
        """Return and delete the run's warnings in one step, so each is delivered once."""
        key = self._keys.pending_warnings(thread_id)
        with redis_errors("warning drain"):
            raw = await self._drain(keys=[key], args=[run_id])
            if raw:
                await self._r.zrem(self._keys.warnings_index(), _member(key, run_id))
        return _texts(raw)

    async def peek(self, thread_id: str, run_id: str) -> list[str]:
        with redis_errors("warning read"):
            raw = await self._r.hget(self._keys.pending_warnings(thread_id), run_id)
        return _texts(raw)

    async def clear_run(self, thread_id: str, run_id: str) -> None:
        await self.drain(thread_id, run_id)

    async def clear_other_runs(self, thread_id: str, keep_run_id: str) -> None:
        """At run start: warnings left by earlier (crashed or stopped) runs must never leak in."""
        key = self._keys.pending_warnings(thread_id)
        with redis_errors("warning clear"):
            cleared = await self._clear_others(keys=[key], args=[keep_run_id])
            if cleared:
                members = [_member(key, as_text(run)) for run in cleared]
                await self._r.zrem(self._keys.warnings_index(), *members)
