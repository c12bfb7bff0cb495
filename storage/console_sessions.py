"""Operator console sessions: a login lives in Redis until its expiry or logout.

The browser holds a signed cookie naming the session; the record here is what makes logout (and
an expiry) hold across every process of the fleet, and what a stolen cookie loses once the admin
logs out. `sb:console:<sha256 of the session id>` is `"1"` with the session's lifetime as TTL: the
id itself is never stored, so reading Redis gives no usable cookie.
"""

from __future__ import annotations

import hashlib
import secrets

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys

__all__ = ["CONSOLE_SESSION_TTL_S", "ConsoleSessions"]

CONSOLE_SESSION_TTL_S = 8 * 3600  # one working day; an admin signs in again the next morning


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class ConsoleSessions:
    def __init__(
        self, client: redis.Redis, *, keys: Keys, ttl_s: int = CONSOLE_SESSION_TTL_S
    ) -> None:
        self._r = client
        self._keys = keys
        self.ttl_s = ttl_s

    async def open(self) -> str:
        """A new session's id (for the cookie), valid for `ttl_s`."""
        session_id = secrets.token_urlsafe(24)
        with redis_errors("console session open"):
            await self._r.set(self._keys.console_session(_digest(session_id)), b"1", ex=self.ttl_s)
        return session_id

    async def alive(self, session_id: str) -> bool:
        with redis_errors("console session check"):
            return bool(await self._r.exists(self._keys.console_session(_digest(session_id))))

    async def close(self, session_id: str) -> None:
        with redis_errors("console session close"):
            await self._r.delete(self._keys.console_session(_digest(session_id)))
