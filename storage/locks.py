"""Per-thread lock: one turn per agent thread across every worker process.

Taken by `ThreadQueue.submit`/`resume` together with the queue. Value: a random token, the
holder's fencing token (the checkpoint write checks it). A holder extends the TTL while it works; if it dies the lock frees itself
after `LOCK_TTL_S`. Release and extend are token-checked in Lua so a holder that lost the lock can
never free someone else's.
The stop flag (`/stop` from any process) is a string, `"1"` for a `/stop` and `"i"` for an
interrupt (`SWITCHBOARD_BUSY=interrupt`), that the holder polls while extending; a holder that
takes it overwrites it with its beat id and kind, so the take is idempotent under a resend.
"""

from __future__ import annotations

import secrets

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from switchboard.state import Lock, StopRequest

__all__ = ["LOCK_TTL_S", "STOP_TTL_S", "Lock", "ThreadLocks", "lock_ms"]

LOCK_TTL_S = (
    30.0  # Short so a crashed worker's thread is free again quickly; held ones are extended.
)
STOP_TTL_S = 600  # A stop request outlives any turn it may target, then vanishes.

# ARGV[2]: '1' for `/stop`, 'i' for an interrupt (which never overwrites a pending `/stop`).
_STOP = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[2] == 'i' and redis.call('GET', KEYS[2]) == '1' then return 1 end
  redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[1])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# A holder that lost the lock must not take the stop flag: it belongs to the new holder's turn.
# Taking a request marks it with the beat (ARGV[3], unique per call) and its kind instead of
# deleting it, so a resend of the same call after a lost reply (redis-py retries once) sees the
# request again, while the next beat does not. Returns {held, 0 | 1 (stop) | 2 (interrupt)}.
_KEEP = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0, 0} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local stop = redis.call('GET', KEYS[2])
if stop == '1' or stop == 'i' then
  redis.call('SET', KEYS[2], ARGV[3] .. ':' .. stop, 'KEEPTTL')
elseif stop and string.sub(stop, 1, #ARGV[3] + 1) == ARGV[3] .. ':' then
  stop = string.sub(stop, #ARGV[3] + 2)
else
  return {1, 0}
end
if stop == '1' then return {1, 1} end
return {1, 2}
"""


def lock_ms(ttl_s: float) -> int:
    """Lock TTL in ms for PX/PEXPIRE, which reject 0: a sub-ms TTL still means "expire soon"."""
    return max(1, round(ttl_s * 1000))


class ThreadLocks:
    def __init__(self, client: redis.Redis, *, keys: Keys, ttl_s: float = LOCK_TTL_S) -> None:
        self._r = client
        self._keys = keys
        self.ttl_s = ttl_s
        self._stop = client.register_script(_STOP)
        self._release = client.register_script(_RELEASE)
        self._keep = client.register_script(_KEEP)

    async def keep(self, lock: Lock) -> tuple[bool, StopRequest]:
        """One beat of a running turn: extend the lock and take a pending `/stop` or interrupt,
        in one script. Returns (still held, what was requested)."""
        with redis_errors("lock keep"):
            held, stop = await self._keep(
                keys=[self._keys.lock(lock.thread_id), self._keys.stop(lock.thread_id)],
                args=[lock.token, lock_ms(lock.ttl_s), f"beat:{secrets.token_hex(6)}"],
            )
        return bool(held), StopRequest(int(stop))

    async def release(self, lock: Lock) -> bool:
        with redis_errors("lock release"):
            return bool(
                await self._release(keys=[self._keys.lock(lock.thread_id)], args=[lock.token])
            )

    async def request_stop(self, thread_id: str, *, interrupt: bool = False) -> bool:
        """Ask the holder (in any process) to cancel its turn; False if nothing is running.
        `interrupt`: for a new message (the holder answers the new batch), not a `/stop`."""
        with redis_errors("stop request"):
            return bool(
                await self._stop(
                    keys=[self._keys.lock(thread_id), self._keys.stop(thread_id)],
                    args=[STOP_TTL_S, "i" if interrupt else "1"],
                )
            )
