"""Leases: one owner across the fleet for a connection that must not be opened twice (Telegram
long polling answers a second poller with 409 Conflict; a Discord gateway session per shard).

`sb:lease:<name>` holds the owner's random token with a TTL (`ttl_s`, 30 s by default); the owner
renews it well before it runs out. Acquire, renew and release are token-checked scripts and
idempotent for the same token, so a resend after a lost reply changes nothing. An owner that dies
stops renewing and a standby takes over once the TTL has passed.

A group of leases (one per Discord shard) is shared out fairly among the processes that compete
for it: each beats into `sb:lease-members:<group>`, a zset of process tokens scored by the last
beat (Redis's clock, so hosts need not agree on the time); a member silent for a TTL is dropped,
so a dead process stops counting about when its leases expire.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from storage.locks import lock_ms

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript
    from redis.typing import EncodableT

__all__ = ["LEASE_TTL_S", "Leases"]

LEASE_TTL_S = 30.0

_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
_BEAT = """
local now = redis.call('TIME')
local now_ms = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('ZADD', KEYS[1], now_ms, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms - ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""


class Leases:
    def __init__(self, client: redis.Redis, *, keys: Keys, ttl_s: float = LEASE_TTL_S) -> None:
        self._r = client
        self._keys = keys
        self.ttl_s = ttl_s
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._beat = client.register_script(_BEAT)

    async def acquire(self, name: str, token: str) -> bool:
        """Take the lease if it is free (or already ours); True when we hold it now."""
        return await self._run("acquire", self._acquire, name, [token, lock_ms(self.ttl_s)])

    async def renew(self, name: str, token: str) -> bool:
        """Push the expiry out; False means the lease was lost (expired, maybe taken)."""
        return await self._run("renew", self._renew, name, [token, lock_ms(self.ttl_s)])

    async def release(self, name: str, token: str) -> None:
        await self._run("release", self._release, name, [token])

    async def beat(self, group: str, member: str) -> int:
        """Say `member` still competes for `group`'s leases; returns how many members do."""
        key = self._keys.lease_members(group)
        with redis_errors("lease beat"):
            return int(await self._beat(keys=[key], args=[member, lock_ms(self.ttl_s)]))

    async def leave(self, group: str, member: str) -> None:
        """Stop counting `member` at once (a clean shutdown), so the others' shares grow now."""
        with redis_errors("lease leave"):
            await self._r.zrem(self._keys.lease_members(group), member)

    async def holder(self, name: str) -> str | None:
        with redis_errors("lease read"):
            raw = await self._r.get(self._keys.lease(name))
        return raw.decode() if isinstance(raw, bytes) else raw

    async def _run(self, what: str, script: AsyncScript, name: str, args: list[EncodableT]) -> bool:
        with redis_errors(f"lease {what}"):
            return bool(await script(keys=[self._keys.lease(name)], args=args))
