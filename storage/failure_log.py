"""The recent failures users were told about, by reference id, for the operator console.

A user pastes "Sorry … (ref 1a2b3c4d)"; the admin needs what happened behind it without a shell
and a log search. `sb:failures` is one list, newest first, capped at `FAILURES_KEPT` entries and
kept `FAILURES_TTL_S` after the last failure: bounded whatever the error rate. Each entry is JSON
`{"ref", "at", "category", "event", "error", "platform", "chat_id", "thread_id"}`; `error` is the
exception's class name only (a message may hold user text or a token, never written here).

One key, so one slot: a push and its trim and expiry are one MULTI on a cluster too. Only failures
write here, never a plain turn.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from switchboard.state import FailureRecord

__all__ = ["FAILURES_KEPT", "FAILURES_TTL_S", "FailureLog", "FailureRecord"]

FAILURES_KEPT = 1000  # about a bad hour on a busy fleet; the console reads them all at once
FAILURES_TTL_S = 7 * 24 * 3600  # a user may report a failure days later; a quiet week clears it


def _decode(raw: bytes | str) -> FailureRecord | None:
    try:
        fields = json.loads(raw)
        return FailureRecord(**{k: fields[k] for k in FailureRecord.__slots__ if k in fields})
    except (ValueError, TypeError):
        return None  # a foreign or damaged entry is skipped, never a failing page


class FailureLog:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        kept: int = FAILURES_KEPT,
        ttl_s: int = FAILURES_TTL_S,
    ) -> None:
        self._r = client
        self._key = keys.failures()
        self.kept = kept
        self.ttl_s = ttl_s

    async def record(self, failure: FailureRecord) -> None:
        """Push one failure, trimming the oldest beyond the cap, in one transaction."""
        with redis_errors("failure record"):
            async with self._r.pipeline(transaction=True) as pipe:
                pipe.lpush(self._key, json.dumps(asdict(failure), separators=(",", ":")))
                pipe.ltrim(self._key, 0, self.kept - 1)
                pipe.expire(self._key, self.ttl_s)
                await pipe.execute()

    async def recent(self, limit: int = FAILURES_KEPT) -> list[FailureRecord]:
        """The newest `limit` failures, newest first."""
        with redis_errors("failure list"):
            raw = await self._r.lrange(self._key, 0, max(0, limit - 1))
        return [found for item in raw if (found := _decode(item)) is not None]

    async def find(self, ref: str) -> list[FailureRecord]:
        """The kept failures whose reference id starts with `ref` (what a user pasted, maybe
        with a stray `ref ` or parenthesis around it)."""
        wanted = ref.strip().strip("()").removeprefix("ref").strip().lower()
        if not wanted:
            return []
        return [f for f in await self.recent() if f.ref.lower().startswith(wanted)]
