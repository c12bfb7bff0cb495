"""The inbox: a Redis Stream every inbound message is appended to before the platform is told OK.

| key                | type   | value                                          | TTL  |
|--------------------|--------|------------------------------------------------|------|
| `sb:inbox`         | stream | field `m`: one message (JSON, channel-owned)   | none |

Workers read it through the consumer group `workers` (one consumer name per process). An entry is
finished (XACK and XDEL in one script) once its message was answered or handed to its thread's
queue, so the stream holds only unfinished work; `append` refuses past `max_len` unfinished
entries (the platform then redelivers later) instead of trimming, which would drop messages.
A consumer that stops leaves its entries pending; `reclaim` hands entries idle for longer than
`claim_idle_s` to another consumer, and a live consumer keeps its own entries fresh with `touch`.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

import redis.asyncio as redis
from redis.exceptions import RedisError, ResponseError

from storage.failures import storage_error
from storage.keys import Keys
from storage.metrics import INBOX_LAG, INBOX_PENDING, INBOX_RECLAIMED
from switchboard.errors import StorageError
from switchboard.state import Entry

__all__ = ["INBOX_MAX_LEN", "Entry", "Inbox", "InboxFull", "InboxSummary", "consumer_name"]

INBOX_MAX_LEN = 100_000  # unfinished entries; far beyond any burst a worker fleet drains
GROUP = "workers"
_FIELD = b"m"

_APPEND = """
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[2]) then return false end
return redis.call('XADD', KEYS[1], '*', 'm', ARGV[1])
"""
_FINISH = """
local n = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
redis.call('XDEL', KEYS[1], unpack(ARGV, 2))
return n
"""
# ARGV: group consumer ids... Resets the idle time of those ids still pending for this consumer,
# in one step: an entry another consumer reclaimed meanwhile is left to it.
_TOUCH = """
local claim = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
for i = 3, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2])
  if #row > 0 then claim[#claim + 1] = ARGV[i] end
end
if #claim == 5 then return 0 end
claim[#claim + 1] = 'JUSTID'
redis.call(unpack(claim))
return #claim - 6
"""


class InboxFull(StorageError):
    """Too much unfinished work: the message was not taken, the platform should redeliver."""


@dataclass(frozen=True, slots=True)
class InboxSummary:
    """The inbox fleet-wide, for an operator: how much work waits and since when."""

    unfinished: int  # entries not yet answered or queued (read or not)
    in_hand: int  # read by a worker and being handled
    unread: int  # waiting for a free worker
    oldest_at: float | None  # epoch seconds the oldest unfinished entry arrived (None: empty)


def consumer_name() -> str:
    """Unique per process, readable in XINFO: host, pid and a random suffix (pids repeat)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Inbox:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        consumer: str | None = None,
        max_len: int = INBOX_MAX_LEN,
        claim_idle_s: float = 30.0,
    ) -> None:
        self._r = client
        self.key = keys.inbox()
        self.consumer = consumer or consumer_name()
        self._max_len = max_len
        self.claim_idle_ms = int(claim_idle_s * 1000)
        self._append = client.register_script(_APPEND)
        self._finish = client.register_script(_FINISH)
        self._touch = client.register_script(_TOUCH)
        self._cursor = "0-0"

    async def ensure_group(self) -> None:
        """Create the stream and the group (idempotent); the group starts at the stream's start
        so entries appended before any worker existed are read too."""
        try:
            await self._r.xgroup_create(self.key, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise storage_error("inbox setup", exc) from None
        except RedisError as exc:
            raise storage_error("inbox setup", exc) from None

    async def append(self, payload: bytes) -> str:
        """Append one message; its entry id. Raises StorageError (InboxFull when over the cap)."""
        try:
            entry_id = await self._append(keys=[self.key], args=[payload, self._max_len])
        except RedisError as exc:
            raise storage_error("inbox append", exc) from None
        if not entry_id:
            raise InboxFull(f"inbox holds {self._max_len} unfinished messages")
        return _text(entry_id)

    async def read(self, count: int, block_s: float) -> list[Entry]:
        """New entries for this consumer, waiting up to `block_s` for the first one."""
        try:
            reply = await self._r.xreadgroup(
                GROUP,
                self.consumer,
                {self.key: ">"},
                count=count,
                block=max(1, int(block_s * 1000)),
            )
        except ResponseError as exc:
            if "NOGROUP" in str(exc):  # the stream was deleted (FLUSHALL, a restore): recreate
                await self.ensure_group()
                return []
            raise storage_error("inbox read", exc) from None
        except RedisError as exc:
            raise storage_error("inbox read", exc) from None
        entries: list[Entry] = []
        for _stream, items in reply or ():
            for entry_id, fields in items:
                entries.append(Entry(_text(entry_id), bytes(fields.get(_FIELD, b""))))
        return entries

    async def reclaim(self, count: int) -> tuple[list[Entry], list[str]]:
        """Entries of consumers that stopped (idle past `claim_idle_s`), now ours, and the ids of
        pending entries whose data is gone (finish those). One XAUTOCLAIM page per call."""
        try:
            reply = await self._r.xautoclaim(
                self.key, GROUP, self.consumer, self.claim_idle_ms, self._cursor, count=count
            )
            self._cursor = _text(reply[0])
            claimed = [(_text(i), f) for i, f in reply[1] if i is not None]
            gone = [_text(i) for i in (reply[2] if len(reply) > 2 else ())]
            counts = await self._deliveries([i for i, _ in claimed])
        except ResponseError as exc:
            if "NOGROUP" in str(exc):
                await self.ensure_group()
                return [], []
            raise storage_error("inbox reclaim", exc) from None
        except RedisError as exc:
            raise storage_error("inbox reclaim", exc) from None
        entries = [
            Entry(i, bytes((f or {}).get(_FIELD, b"")), counts.get(i, 2)) for i, f in claimed
        ]
        if entries:
            INBOX_RECLAIMED.inc(len(entries))
        return entries, gone

    async def _deliveries(self, ids: list[str]) -> dict[str, int]:
        if not ids:
            return {}
        pipe = self._r.pipeline(transaction=False)
        for entry_id in ids:
            pipe.xpending_range(self.key, GROUP, min=entry_id, max=entry_id, count=1)
        out: dict[str, int] = {}
        for rows in await pipe.execute():
            for row in rows:
                out[_text(row["message_id"])] = int(row["times_delivered"])
        return out

    async def touch(self, ids: list[str]) -> None:
        """Reset the idle time of entries this consumer still works on (a long turn), so no
        other consumer reclaims them. Only entries still ours are touched, checked and claimed in
        one script: one another consumer reclaimed while we stalled is its now, and claiming it
        back would run it twice."""
        if not ids:
            return
        try:
            await self._touch(keys=[self.key], args=[GROUP, self.consumer, *sorted(set(ids))])
        except RedisError as exc:
            raise storage_error("inbox touch", exc) from None

    async def finish(self, ids: list[str]) -> None:
        """Acknowledge and delete entries whose messages were answered or queued."""
        if not ids:
            return
        try:
            await self._finish(keys=[self.key], args=[GROUP, *ids])
        except RedisError as exc:
            raise storage_error("inbox finish", exc) from None

    async def observe(self) -> None:
        """Refresh the pending and lag gauges from XINFO GROUPS (the group's own counters)."""
        try:
            groups = await self._r.xinfo_groups(self.key)
        except RedisError as exc:
            raise storage_error("inbox info", exc) from None
        for group in groups:
            if _text(group.get("name", b"")) == GROUP:
                INBOX_PENDING.set(int(group.get("pending") or 0))
                INBOX_LAG.set(int(group.get("lag") or 0))

    async def backlog(self) -> int:
        """Unfinished entries (read or not)."""
        try:
            return int(await self._r.xlen(self.key))
        except RedisError as exc:
            raise storage_error("inbox length", exc) from None

    async def summary(self) -> InboxSummary:
        """Length, the group's counters and the oldest entry's arrival, in one round trip."""
        try:
            async with self._r.pipeline(transaction=False) as pipe:
                pipe.xlen(self.key)
                pipe.xinfo_groups(self.key)
                pipe.xrange(self.key, count=1)
                length, groups, oldest = await pipe.execute(raise_on_error=False)
        except RedisError as exc:
            raise storage_error("inbox summary", exc) from None
        if isinstance(length, RedisError):
            raise storage_error("inbox summary", length)
        named = groups if isinstance(groups, list) else []  # no stream yet: no group either
        ours = next((g for g in named if _text(g.get("name", b"")) == GROUP), {})
        first = oldest[0][0] if isinstance(oldest, list) and oldest else None
        return InboxSummary(
            unfinished=int(length or 0),
            in_hand=int(ours.get("pending") or 0),
            unread=int(ours.get("lag") or 0),
            oldest_at=int(_text(first).partition("-")[0]) / 1000 if first else None,
        )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
