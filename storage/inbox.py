"""The inbox: Redis Streams every inbound message is appended to before the platform is told OK.

| key                                | type   | value                                        | TTL  |
|------------------------------------|--------|----------------------------------------------|------|
| `sb:inbox` (one shard)             | stream | `m`: one message (JSON), `r`: its chat       | none |
| `sb:inbox:{<N>.<i>.<salt>}` (N > 1)| stream | the same, for the chats routed to shard i    | none |
| `sb:inbox:layouts`                 | set    | the shard counts processes announced         | none |

`shards` streams (`shards.py`): a message goes to the shard of its chat, so the messages of one
conversation are read in the order they came. Workers read every shard through the consumer
group `workers` (one consumer name per process, one reader per shard). An entry is finished
(XACK and XDEL in one script) once its message was answered or handed to its thread's queue, so a
stream holds only unfinished work; `append` refuses past `max_len` unfinished entries in all
(`max_len / shards` per shard; the platform then redelivers later) instead of trimming, which
would drop messages. A consumer that stops leaves its entries pending; `reclaim` hands entries
idle for longer than `claim_idle_s` to another consumer, and a live consumer keeps its own entries
fresh with `touch`. `reclaim` also reads the streams of other shard counts processes announced,
so changing `SWITCHBOARD_INBOX_SHARDS` on a running fleet drains the old streams.

`chat_waiting` serves `collect` mode: whether a later message of one chat (field `r`, the route
the append was given) that arrived within a window is still unfinished, i.e. not yet in its
thread's queue, wherever it is (unread, or in some worker's gates), with Redis's time.

An entry id is the stream id, with `@<tag>` appended when the stream is a tagged shard, so ids
of two shards never collide and `finish` knows the stream from the id alone.

With `min_replicas` > 0 an append is acknowledged only once `WAIT` saw that many replicas take
it (in the same round trip as the append): an entry a failover would lose is reported as a
failed append, and the platform redelivers.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis.asyncio as redis
import structlog
from redis.exceptions import NoScriptError, RedisError, ResponseError

from storage.decoding import as_text
from storage.failures import redis_errors, storage_error
from storage.keys import Keys
from storage.metrics import INBOX_LAG, INBOX_PENDING, INBOX_RECLAIMED
from storage.shards import LEARN_EVERY_S, Layout, announce, others
from switchboard.errors import StorageError, TransientStorageError
from switchboard.state import Entry

if TYPE_CHECKING:
    from redis.typing import EncodableT

__all__ = ["INBOX_MAX_LEN", "Entry", "Inbox", "InboxFull", "InboxSummary", "consumer_name"]

INBOX_MAX_LEN = 100_000  # unfinished entries; far beyond any burst a worker fleet drains
GROUP = "workers"
_FIELD = b"m"
_log = structlog.get_logger(__name__)
_RECLAIM_ROUNDS = 3  # pipelines per reclaim at most: shards with more to take get the rest

_APPEND = """
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[2]) then return false end
return redis.call('XADD', KEYS[1], '*', 'm', ARGV[1], 'r', ARGV[3])
"""
# KEYS: the shard. ARGV: an entry's stream id, its chat's route, the window's end (ms), a page
# size. Returns {Redis's now (ms), 1 when an entry of that chat after it and within the window
# is still in the stream}. Entries of other chats cost a field compare each, at most 20 pages.
_CHAT_WAITING = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start, route, page = '(' .. ARGV[1], ARGV[2], tonumber(ARGV[4])
for _ = 1, 20 do
  local rows = redis.call('XRANGE', KEYS[1], start, ARGV[3], 'COUNT', page)
  for _, row in ipairs(rows) do
    local fields = row[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'r' and fields[i + 1] == route then return {now, 1} end
    end
  end
  if #rows < page then return {now, 0} end
  start = '(' .. rows[#rows][1]
end
return {now, 1}
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
        shards: int = 1,
        min_replicas: int = 0,
        replicas_timeout_ms: int = 2000,
    ) -> None:
        self._r = client
        self._keys = keys
        self.layout = Layout(shards)
        self.shards = shards
        self.key = keys.inbox(self.layout.tags[0])
        self.consumer = consumer or consumer_name()
        self._shard_cap = max(1, max_len // shards)
        self._max_len = max_len
        self.claim_idle_ms = int(claim_idle_s * 1000)
        self._min_replicas = min_replicas
        self._replicas_timeout_ms = replicas_timeout_ms
        self._append = client.register_script(_APPEND)
        self._finish = client.register_script(_FINISH)
        self._touch = client.register_script(_TOUCH)
        self._chat_waiting = client.register_script(_CHAT_WAITING)
        self._cursors: dict[str, str] = {}
        self._draining: tuple[str, ...] = ()  # tags of other layouts' shards
        self._turn = 0  # where the next reclaim starts, so every shard gets its turn
        self._learn_at = 0.0  # when to read the announced layouts again (monotonic)

    @property
    def _tags(self) -> tuple[str, ...]:
        return self.layout.tags

    async def ensure_group(self) -> None:
        """Create every shard's stream and the group (idempotent; the group starts at the
        stream's start so entries appended before any worker existed are read too), and announce
        this shard count, learning the others to drain."""
        for tag in self._tags:
            await self._ensure_group(tag)
        self._learn(await announce(self._r, self._keys, self.shards))
        if self._min_replicas:
            await self._check_replicas()

    async def _check_replicas(self) -> None:
        """Say at start when fewer replicas are connected than appends wait for: every append
        would fail (and every platform redeliver) until they are."""
        try:
            info = await self._r.info("replication")
        except RedisError:
            return  # INFO may be denied (ACLs, proxies); the check is a courtesy
        connected = int(info.get("connected_slaves", 0) or 0)
        if connected < self._min_replicas:
            _log.warning("inbox.replicas_missing", connected=connected, required=self._min_replicas)

    async def _ensure_group(self, tag: str) -> None:
        try:
            await self._r.xgroup_create(self._keys.inbox(tag), GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise storage_error("inbox setup", exc) from None
        except RedisError as exc:
            raise storage_error("inbox setup", exc) from None

    def _learn(self, counts: Iterable[int]) -> None:
        self._draining = tuple(t for n in counts for t in Layout(n).tags)

    async def append(self, payload: bytes, route: str = "") -> str:
        """Append one message to the shard of `route` (its chat); its entry id. Raises
        StorageError (InboxFull when over the cap; transient when too few replicas took it)."""
        tag = self.layout.tag_for(route)
        key = self._keys.inbox(tag)
        with redis_errors("inbox append"):
            if self._min_replicas:
                entry_id = await self._append_replicated(key, payload, route)
            else:
                entry_id = await self._append(keys=[key], args=[payload, self._shard_cap, route])
        if not entry_id:
            raise InboxFull(f"inbox holds {self._max_len} unfinished messages")
        return _entry_id(entry_id, tag)

    async def _append_replicated(self, key: str, payload: bytes, route: str) -> Any:
        """The append and `WAIT` on one connection in one round trip (WAIT counts the replicas
        that have this connection's writes); the script's text is sent only after NOSCRIPT."""
        args: list[EncodableT] = [payload, self._shard_cap, route]
        for send_text in (False, True):
            async with self._r.pipeline(transaction=False) as pipe:
                if send_text:
                    pipe.eval(_APPEND, 1, key, *args)
                else:
                    pipe.evalsha(self._append.sha, 1, key, *args)
                pipe.execute_command("WAIT", self._min_replicas, self._replicas_timeout_ms)
                entry_id, acked = await pipe.execute(raise_on_error=False)
            if isinstance(entry_id, NoScriptError) and not send_text:
                continue
            if isinstance(entry_id, RedisError):
                raise entry_id
            if isinstance(acked, RedisError):
                raise acked
            if entry_id and int(acked) < self._min_replicas:
                raise TransientStorageError(
                    f"inbox append failed: {int(acked)} of {self._min_replicas} replicas "
                    "confirmed it in time"
                )
            return entry_id
        raise StorageError("inbox append failed: the script could not be loaded")

    async def read(self, count: int, block_s: float, shard: int = 0) -> list[Entry]:
        """New entries of one shard for this consumer, waiting up to `block_s` for the first."""
        tag = self._tags[shard]
        key = self._keys.inbox(tag)
        try:
            reply = await self._r.xreadgroup(
                GROUP, self.consumer, {key: ">"}, count=count, block=max(1, int(block_s * 1000))
            )
        except ResponseError as exc:
            if "NOGROUP" in str(exc):  # the stream was deleted (FLUSHALL, a restore): recreate
                await self._ensure_group(tag)
                return []
            raise storage_error("inbox read", exc) from None
        except RedisError as exc:
            raise storage_error("inbox read", exc) from None
        return _entries(reply, tag)

    async def chat_waiting(self, entry_id: str, route: str, until_ms: int) -> tuple[int, bool]:
        """Redis's now (ms), and whether a message of `route`'s chat that arrived after
        `entry_id` and by `until_ms` (Redis's clock) is still unfinished in the entry's shard."""
        sid, _, tag = entry_id.partition("@")
        with redis_errors("inbox chat window"):
            now, waiting = await self._chat_waiting(
                keys=[self._keys.inbox(tag)], args=[sid, route, until_ms, 100]
            )
        return int(now), bool(waiting)

    async def reclaim(self, count: int) -> tuple[list[Entry], list[str]]:
        """Entries of consumers that stopped (idle past `claim_idle_s`) and unread entries of
        other layouts being drained, now ours, and the ids of pending entries whose data is gone
        (finish those); at most `count` entries in all. One pipeline (one round trip per node)
        takes an XAUTOCLAIM page of every shard, a share of `count` each; what a shard with more
        to take could not, a few more rounds over those shards take from the rest of `count`."""
        own = [(t, False) for t in self._tags] + [(t, False) for t in self._draining]
        work = own + [(t, True) for t in self._draining]
        if count <= 0 or not work:
            return [], []
        start = self._turn % len(work)
        chosen = (work[start:] + work[:start])[:count]
        self._turn += len(chosen)
        claimed: list[tuple[str, str, dict[bytes, bytes] | None]] = []
        fresh: list[Entry] = []
        gone: list[str] = []
        for _ in range(_RECLAIM_ROUNDS):
            left = count - len(claimed) - len(fresh)
            if left <= 0 or not chosen:
                break
            chosen = chosen[:left]
            each = max(1, left // len(chosen))
            chosen = await self._reclaim_round(chosen, each, claimed, fresh, gone)
        counts = await self._deliveries([(t, i) for t, i, _ in claimed])
        entries = [
            Entry(_entry_id(i, t), bytes((f or {}).get(_FIELD, b"")), counts.get((t, i), 2))
            for t, i, f in claimed
        ]
        if entries:
            INBOX_RECLAIMED.inc(len(entries))
        return entries + fresh, gone

    async def _reclaim_round(
        self,
        chosen: list[tuple[str, bool]],
        each: int,
        claimed: list[tuple[str, str, dict[bytes, bytes] | None]],
        fresh: list[Entry],
        gone: list[str],
    ) -> list[tuple[str, bool]]:
        """One page of `each` from every chosen shard into the lists; the shards whose page was
        full (they may hold more)."""
        learn = time.monotonic() >= self._learn_at
        with redis_errors("inbox reclaim"):
            async with self._r.pipeline(transaction=False) as pipe:
                for tag, unread in chosen:
                    key = self._keys.inbox(tag)
                    if unread:
                        pipe.xreadgroup(GROUP, self.consumer, {key: ">"}, count=each)
                    else:
                        cursor = self._cursors.get(tag, "0-0")
                        pipe.xautoclaim(
                            key, GROUP, self.consumer, self.claim_idle_ms, cursor, count=each
                        )
                if learn:
                    pipe.smembers(self._keys.inbox_layouts())
                replies = await pipe.execute(raise_on_error=False)
        if learn and not isinstance(replies[-1], RedisError):
            self._learn_at = time.monotonic() + LEARN_EVERY_S
            self._learn(others(replies[-1], self.shards))
        full: list[tuple[str, bool]] = []
        for (tag, unread), reply in zip(chosen, replies[: len(chosen)], strict=True):
            if isinstance(reply, ResponseError) and "NOGROUP" in str(reply):
                if tag in self._tags:
                    await self._ensure_group(tag)
                continue  # a drained layout's stream that was never created: nothing there
            if isinstance(reply, RedisError):
                raise storage_error("inbox reclaim", reply)
            if unread:
                read = _entries(reply, tag)
                fresh.extend(read)
                got = len(read)
            else:
                self._cursors[tag] = as_text(reply[0])
                page = [(tag, as_text(i), f) for i, f in reply[1] if i is not None]
                claimed.extend(page)
                got = len(page)
                gone.extend(_entry_id(i, tag) for i in (reply[2] if len(reply) > 2 else ()))
            if got >= each:
                full.append((tag, unread))
        return full

    async def _deliveries(self, ids: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
        if not ids:
            return {}
        with redis_errors("inbox reclaim"):
            async with self._r.pipeline(transaction=False) as pipe:
                for tag, entry_id in ids:
                    key = self._keys.inbox(tag)
                    pipe.xpending_range(key, GROUP, min=entry_id, max=entry_id, count=1)
                replies = await pipe.execute()
        out: dict[tuple[str, str], int] = {}
        for (tag, _), rows in zip(ids, replies, strict=True):
            for row in rows:
                out[(tag, as_text(row["message_id"]))] = int(row["times_delivered"])
        return out

    async def touch(self, ids: list[str]) -> None:
        """Reset the idle time of entries this consumer still works on (a long turn), so no
        other consumer reclaims them. Only entries still ours are touched, checked and claimed in
        one script per shard: one another consumer reclaimed while we stalled is its now, and
        claiming it back would run it twice."""
        if not ids:
            return
        with redis_errors("inbox touch"):
            await asyncio.gather(
                *(
                    self._touch(
                        keys=[self._keys.inbox(tag)], args=[GROUP, self.consumer, *sorted(sids)]
                    )
                    for tag, sids in _by_shard(ids).items()
                )
            )

    async def finish(self, ids: list[str]) -> None:
        """Acknowledge and delete entries whose messages were answered or queued."""
        if not ids:
            return
        with redis_errors("inbox finish"):
            await asyncio.gather(
                *(
                    self._finish(keys=[self._keys.inbox(tag)], args=[GROUP, *sids])
                    for tag, sids in _by_shard(ids).items()
                )
            )

    def _all_keys(self) -> list[str]:
        return [self._keys.inbox(t) for t in (*self._tags, *self._draining)]

    async def observe(self) -> None:
        """Refresh the pending and lag gauges from every shard's XINFO GROUPS (the group's own
        counters), summed; one pipeline (one round trip per node)."""
        with redis_errors("inbox info"):
            async with self._r.pipeline(transaction=False) as pipe:
                for key in self._all_keys():
                    pipe.xinfo_groups(key)
                replies = await pipe.execute(raise_on_error=False)
        pending = lag = 0
        for groups in replies:
            named = groups if isinstance(groups, list) else []  # no stream yet: no group either
            ours: dict[str, Any] = next(
                (g for g in named if as_text(g.get("name", b"")) == GROUP), {}
            )
            pending += int(ours.get("pending") or 0)
            lag += int(ours.get("lag") or 0)
        INBOX_PENDING.set(pending)
        INBOX_LAG.set(lag)

    async def backlog(self) -> int:
        """Unfinished entries (read or not), in every shard."""
        with redis_errors("inbox length"):
            async with self._r.pipeline(transaction=False) as pipe:
                for key in self._all_keys():
                    pipe.xlen(key)
                lengths = await pipe.execute()
        return sum(int(n or 0) for n in lengths)

    async def summary(self) -> InboxSummary:
        """Length, the group's counters and the oldest entry's arrival over every shard, in
        one pipeline (one round trip per node)."""
        keys = self._all_keys()
        with redis_errors("inbox summary"):
            async with self._r.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.xlen(key)
                    pipe.xinfo_groups(key)
                    pipe.xrange(key, count=1)
                replies = await pipe.execute(raise_on_error=False)
        unfinished = in_hand = unread = 0
        oldest: float | None = None
        for at in range(0, len(replies), 3):
            length, groups, first = replies[at : at + 3]
            if isinstance(length, RedisError):
                raise storage_error("inbox summary", length)
            named = groups if isinstance(groups, list) else []  # no stream yet: no group either
            ours: dict[str, Any] = next(
                (g for g in named if as_text(g.get("name", b"")) == GROUP), {}
            )
            unfinished += int(length or 0)
            in_hand += int(ours.get("pending") or 0)
            unread += int(ours.get("lag") or 0)
            if isinstance(first, list) and first:
                arrived = int(as_text(first[0][0]).partition("-")[0]) / 1000
                oldest = arrived if oldest is None else min(oldest, arrived)
        return InboxSummary(unfinished=unfinished, in_hand=in_hand, unread=unread, oldest_at=oldest)


def _entries(reply: Any, tag: str) -> list[Entry]:
    entries: list[Entry] = []
    for _stream, items in reply or ():
        for entry_id, fields in items:
            entries.append(Entry(_entry_id(entry_id, tag), bytes(fields.get(_FIELD, b""))))
    return entries


def _entry_id(stream_id: bytes | str, tag: str) -> str:
    """Our id of an entry: the stream id, and the shard's tag when it has one."""
    sid = as_text(stream_id)
    return f"{sid}@{tag}" if tag else sid


def _by_shard(ids: Iterable[str]) -> dict[str, list[str]]:
    """Entry ids (ours, or their sortable form) grouped by shard tag, as stream ids."""
    out: dict[str, list[str]] = defaultdict(list)
    for entry_id in ids:
        sid, _, tag = entry_id.partition("@")
        ms, _, seq = sid.partition("-")
        out[tag].append(f"{int(ms)}-{int(seq or 0)}")
    return out
