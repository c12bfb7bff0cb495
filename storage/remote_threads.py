"""Switchboard thread id → thread id on a remote LangGraph server (`SWITCHBOARD_AGENT=http…`).

A LangGraph server owns its thread ids, and its threads outlive any one Switchboard process, so
the mapping lives in Redis: every worker continues the same server thread after a restart. The
value is the server's thread id (a UUID string). The TTL slides with use like the conversation
mapping (`thread_map.py`), so a remembered conversation never loses its server thread first.
"""

from __future__ import annotations

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys
from storage.thread_map import KEEP_FIRST, THREAD_TTL_S

__all__ = ["RemoteThreads"]


class RemoteThreads:
    """`get` / `claim` of the server thread behind one Switchboard thread."""

    def __init__(self, client: redis.Redis, *, keys: Keys, ttl_s: int = THREAD_TTL_S) -> None:
        self._r = client
        self._keys = keys
        self._ttl = ttl_s
        self._claim = client.register_script(KEEP_FIRST)

    async def get(self, thread_id: str) -> str | None:
        """The server thread id, refreshing the mapping's TTL; None when there is none yet."""
        key = self._keys.remote_thread(thread_id)
        with redis_errors("remote thread read"):
            raw = await self._r.getex(key, ex=self._ttl)
        if raw is None:
            return None
        return as_text(raw)

    async def claim(self, thread_id: str, server_thread_id: str) -> str:
        """Store `server_thread_id` unless one is stored already; returns the one that holds."""
        with redis_errors("remote thread claim"):
            raw = await self._claim(
                keys=[self._keys.remote_thread(thread_id)], args=[server_thread_id, self._ttl]
            )
        return as_text(raw)
