"""Messages that arrived while their thread was busy; answered together in the next turn.

A list per thread of JSON entries `{"sender_id", "sender_name", "text", "message_id", "at"}`,
newest last. At most `cap` (10) are kept, dropping the oldest. TTL 1 h, refreshed on every push, so
a queue whose worker died is still there for the next turn but never lingers forever.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

import redis.asyncio as redis
import structlog
from redis.exceptions import RedisError

from storage.keys import Keys
from switchboard.errors import StorageError

__all__ = ["PENDING_CAP", "PENDING_TTL_S", "PendingMessage", "PendingQueue", "parse_pending"]

PENDING_CAP = 10
PENDING_TTL_S = 3600  # Long enough to outlive a slow turn plus a crashed worker's lock TTL.

_log = structlog.get_logger(__name__)

_PUSH = """
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return redis.call('LLEN', KEYS[1])
"""
_DRAIN = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return items
"""


@dataclass(frozen=True, slots=True)
class PendingMessage:
    sender_id: str
    sender_name: str
    text: str
    message_id: str = ""
    at: float = field(default_factory=time.time)


class PendingQueue:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        cap: int = PENDING_CAP,
        ttl_s: int = PENDING_TTL_S,
    ) -> None:
        self._r = client
        self._keys = keys
        self._cap = cap
        self._ttl = ttl_s
        self._push = client.register_script(_PUSH)
        self._drain = client.register_script(_DRAIN)

    async def push(self, thread_id: str, message: PendingMessage) -> int:
        """Queue one message; returns the queue length after trimming to the cap."""
        payload = json.dumps(asdict(message), ensure_ascii=False)
        try:
            return int(
                await self._push(
                    keys=[self._keys.pending(thread_id)], args=[payload, self._cap, self._ttl]
                )
            )
        except RedisError as exc:
            raise StorageError(f"pending push failed: {exc.__class__.__name__}") from None

    async def drain(self, thread_id: str) -> list[PendingMessage]:
        """Take every queued message, oldest first, in one step; corrupt entries are skipped."""
        try:
            raw_items = await self._drain(keys=[self._keys.pending(thread_id)])
        except RedisError as exc:
            raise StorageError(f"pending drain failed: {exc.__class__.__name__}") from None
        return parse_pending(thread_id, raw_items)

    async def length(self, thread_id: str) -> int:
        try:
            return int(await self._r.llen(self._keys.pending(thread_id)))
        except RedisError as exc:
            raise StorageError(f"pending length failed: {exc.__class__.__name__}") from None


def parse_pending(thread_id: str, raw_items: list[bytes]) -> list[PendingMessage]:
    """Queue entries as messages, oldest first; corrupt entries are skipped and logged."""
    out: list[PendingMessage] = []
    for raw in raw_items:
        try:
            data = json.loads(raw)
            out.append(
                PendingMessage(
                    sender_id=str(data["sender_id"]),
                    sender_name=str(data.get("sender_name", "")),
                    text=str(data["text"]),
                    message_id=str(data.get("message_id", "")),
                    at=float(data.get("at", 0.0)),
                )
            )
        except (ValueError, KeyError, TypeError):
            _log.warning("pending.corrupt_skipped", thread_id=thread_id, size=len(raw))
    return out
