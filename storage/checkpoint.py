"""LangGraph checkpoint saver on plain Redis 7 / Valkey: strings, hashes and sorted sets only.

Why this shape: a thread owns a fixed set of six keys, whatever its size, so one Lua script can
write a checkpoint with all its channel values (a crash never leaves a checkpoint pointing at
missing blobs) and refresh the optional whole-thread TTL on every key at O(1) cost. Nothing else
has a TTL, so no blob a live checkpoint references can expire on its own.

Keys of one thread (all carry the `{<thread_id>}` hash tag, so every script touches one slot);
`m` below is a checkpoint's member `<ns>\\0<checkpoint_id>`:

| suffix    | type       | holds                                                                  |
|-----------|------------|------------------------------------------------------------------------|
| `cp:idx`  | zset (lex) | `m` per checkpoint; latest / `before` / paging are ZREVRANGEBYLEX      |
| `cp:chk`  | hash       | `m` checkpoint without values, `m\\0m` metadata, `m\\0p` parent id,     |
|           |            | `m\\0r` channel refs `ch\\0ver\\0ch\\0ver…`, `m\\0u` run id              |
| `cp:blob` | hash       | `<ns>\\0<channel>\\0<version>` → channel value (one per version)        |
| `cp:wr`   | hash       | `m\\0<task_id>\\0<idx>` → pending write                                 |
| `cp:widx` | zset (lex) | the `cp:wr` fields, so one checkpoint's writes are one lex range       |
| `cp:ridx` | zset (lex) | `<run_id>\\0m`, so delete_for_runs finds a run's checkpoints           |

Nothing lives outside the thread's six keys: `adelete_for_runs`, which has no thread id, walks
the threads' run indexes (SCAN, an admin path like `alist(None)`), so a turn leaves no per-run key
behind.

Pruning (`keep`, off by default, as LangGraph's savers): each checkpoint write, in the same script
and after the same fence check, removes every checkpoint of its namespace but the newest `keep + 1`,
with their pending writes and every blob no remaining checkpoint references. The latest
checkpoint's pending writes (an open clarification resumes from them) are never touched; a writer
that lost the thread lock writes nothing and so prunes nothing. A thread therefore holds one
message list (plus `keep` older ones) however long it gets. Checkpoints whose metadata counts
DeltaChannel updates are not pruned on write (replaying them needs ancestors; `aprune` keeps those).

Values go through `self.serde.dumps_typed` and are stored as `<type>\\0<bytes>`; namespaces,
checkpoint ids, channel names, task ids and run ids must not contain NUL.

Semantics follow InMemorySaver, with two deliberate differences: `alist` without a namespace
returns every namespace's checkpoints newest first by checkpoint id (as the SQL savers do), and
`alist(None)` walks threads one by one (SCAN, of every primary on a cluster; an admin path, never
a hot one). The saver is
async-only: the sync methods raise NotImplementedError.
"""

from __future__ import annotations

import contextlib
import random
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from typing import Any, cast

import redis.asyncio as redis
import structlog
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from storage import checkpoint_scripts as scripts
from storage.failures import redis_errors
from storage.keys import Keys
from storage.scripts import ScriptCall
from switchboard.errors import FencedOut

__all__ = ["FENCE_KEY", "FencedOut", "RedisCheckpointSaver", "strict_serde"]

FENCE_KEY = "fence"
"""A `configurable` entry holding the writer's thread-lock token: checkpoints are written only
while that token still holds the lock, so a worker that lost its lock cannot fork the history."""
_OFFERS_KEPT = 4096  # reads sent ahead and not (yet) taken: one per turn in flight


_log = structlog.get_logger(__name__)


def strict_serde() -> JsonPlusSerializer:
    """LangGraph's serializer in strict msgpack mode: a stored value names a class to rebuild,
    and only LangGraph's own safe types (messages, `Send`, `Interrupt`, `Command`, dates, …) are
    rebuilt; any other `module.attr` comes back as its plain data, never called. The default
    (permissive) mode imports and calls whatever a value names, so one overwritten value would
    run `os.system` on the thread's next turn. None of our own classes reach graph state
    (attachments are content-block dicts, errors their `repr`), so the safe list is the whole
    list; a graph's own state classes are added by LangGraph itself
    (`LANGGRAPH_STRICT_MSGPACK=true` makes `compile` pass them to `with_allowlist`)."""
    return JsonPlusSerializer(allowed_msgpack_modules=None)


_SUFFIXES = ("idx", "chk", "blob", "wr", "widx", "ridx")
_EMPTY = b"empty\0"  # A channel in new_versions without a value, as InMemorySaver's ("empty", b"").
_PAGE = 256  # Checkpoint ids fetched per ZREVRANGEBYLEX page while listing.
_LOAD_BATCH = 32  # Full checkpoints loaded per script call while listing.
_ASYNC_ONLY = (
    "RedisCheckpointSaver is async-only: use the a-methods (ainvoke, aget_tuple, alist, …)"
)


def _plain(value: object, what: str) -> str:
    text = str(value)
    if "\0" in text:
        raise ValueError(f"checkpoint {what} must not contain NUL: {text!r}")
    return text


def _raw(value: bytes | str) -> bytes:
    """A reply as bytes: what this package's clients return (`decode_responses` is off), though
    redis-py types every reply as bytes or str."""
    return value if isinstance(value, bytes) else value.encode()


def _maybe_raw(value: bytes | str | None) -> bytes | None:
    return None if value is None else _raw(value)


def _split_typed(raw: bytes) -> tuple[str, bytes]:
    cut = raw.index(b"\0")
    return raw[:cut].decode(), raw[cut + 1 :]


def _config(thread_id: Any, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


class RedisCheckpointSaver(BaseCheckpointSaver[str]):
    """Async LangGraph checkpointer on one Redis/Valkey, shared by every worker process.

    `ttl_s` (off by default) gives every key of a thread the same TTL, refreshed by each write,
    so an idle thread vanishes whole; without it a write also clears any TTL a thread had.
    `keep` (off by default, so the saver behaves as LangGraph's own) prunes on every write: a
    namespace keeps its newest checkpoint and `keep` earlier ones (`SWITCHBOARD_CHECKPOINTS_KEEP`).
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "sb:",
        ttl_s: int | None = None,
        keep: int | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde or strict_serde())
        if ttl_s is not None and ttl_s <= 0:
            raise ValueError("ttl_s must be a positive number of seconds or None")
        if keep is not None and keep < 0:
            raise ValueError("keep must be 0 or more checkpoints, or None")
        self._r = client
        self._keys = Keys(prefix)
        self._ttl = ttl_s or 0
        self._keep = -1 if keep is None else keep
        self._put = client.register_script(scripts.PUT)
        self._writes = client.register_script(scripts.WRITES)
        self._load = client.register_script(scripts.LOAD)
        self._delete = client.register_script(scripts.DELETE)
        # thread id → (lock token, `latest_call` reply): reads sent ahead with a turn's submit
        self._offered: OrderedDict[str, tuple[str, Any]] = OrderedDict()

    def _thread_keys(self, thread_id: str) -> list[str]:
        return [self._keys.checkpoint(thread_id, suffix) for suffix in _SUFFIXES]

    def _dump(self, value: Any) -> bytes:
        kind, data = self.serde.dumps_typed(value)
        return kind.encode() + b"\0" + data

    def _undump(self, raw: bytes) -> Any:
        return self.serde.loads_typed(_split_typed(raw))

    # --- writes -----------------------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        conf = config["configurable"]
        thread_id = conf["thread_id"]
        self._drop_offers([str(thread_id)])
        ns = _plain(conf.get("checkpoint_ns", ""), "namespace")
        checkpoint_id = _plain(checkpoint["id"], "id")
        member = f"{ns}\0{checkpoint_id}"
        stored: dict[str, Any] = dict(checkpoint)  # a Checkpoint no more once its values are out
        values: dict[str, Any] = stored.pop("channel_values")
        meta = get_checkpoint_metadata(config, metadata)
        run_id = meta.get("run_id")
        run = _plain(run_id, "run id") if run_id else ""
        refs = "\0".join(
            f"{_plain(ch, 'channel')}\0{_plain(ver, 'version')}"
            for ch, ver in stored["channel_versions"].items()
        )
        args: list[Any] = [
            self._ttl,
            member,
            self._dump(stored),
            self._dump(meta),
            _plain(conf.get("checkpoint_id") or "", "parent id"),
            refs,
            run,
            _plain(conf.get(FENCE_KEY) or "", "fence"),
            -1 if meta.get("counters_since_delta_snapshot") else self._keep,
        ]
        for ch, ver in new_versions.items():
            field = f"{ns}\0{_plain(ch, 'channel')}\0{_plain(ver, 'version')}"
            args += [field, self._dump(values[ch]) if ch in values else _EMPTY]
        keys = [*self._thread_keys(str(thread_id)), self._keys.lock(str(thread_id))]
        with redis_errors("checkpoint put"):
            written = await self._put(keys=keys, args=args)
        if not written:
            raise FencedOut(f"thread {thread_id} is held by another worker; checkpoint not written")
        return _config(thread_id, ns, checkpoint_id)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not writes:
            return
        conf = config["configurable"]
        self._drop_offers([str(conf["thread_id"])])
        ns = _plain(conf.get("checkpoint_ns", ""), "namespace")
        checkpoint_id = _plain(conf["checkpoint_id"], "id")
        task = _plain(task_id, "task id")
        path = _plain(task_path, "task path")
        args: list[Any] = [self._ttl, f"{ns}\0{checkpoint_id}\0{task}\0"]
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)
            head = f"{task}\0{idx}\0{_plain(channel, 'channel')}\0{path}\0"
            args += [idx, head.encode() + self._dump(value)]
        with redis_errors("checkpoint put_writes"):
            await self._writes(keys=self._thread_keys(str(conf["thread_id"])), args=args)

    # --- reads ------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config["configurable"]
        thread_id = conf["thread_id"]
        ns = _plain(conf.get("checkpoint_ns", ""), "namespace")
        checkpoint_id = get_checkpoint_id(config)
        entries = self._take_offer(str(thread_id), conf) if not checkpoint_id and not ns else None
        if entries is None:
            args = (
                ["ids", f"{ns}\0{_plain(checkpoint_id, 'id')}"] if checkpoint_id else ["latest", ns]
            )
            with redis_errors("checkpoint get"):
                entries = await self._load(keys=self._thread_keys(str(thread_id)), args=args)
        if not entries or not entries[0]:
            return None
        return self._to_tuple(thread_id, entries[0])

    # --- a read sent ahead with the turn's submit ---------------------------------------------

    def latest_call(self, thread_id: str) -> ScriptCall:
        """The read of a thread's latest root checkpoint, which its next run asks for first, as
        a script call to send in the round trip of the turn's submit (`storage.scripts`)."""
        return ScriptCall(self._load, self._thread_keys(str(thread_id)), ["latest", ""])

    def offer(self, thread_id: str, fence: str, reply: Any) -> None:
        """Keep `latest_call`'s reply, read just after taking the thread's lock `fence`, for the
        first `aget_tuple` of that thread's latest root checkpoint under the same fence: no one
        else writes the thread while the lock holds, and every write through this saver drops
        the offer first. A stale offer (a later lock) is never taken; the oldest go first."""
        self._offered[str(thread_id)] = (fence, reply)
        self._offered.move_to_end(str(thread_id))
        while len(self._offered) > _OFFERS_KEPT:
            self._offered.popitem(last=False)

    def _take_offer(self, thread_id: str, conf: dict[str, Any]) -> Any | None:
        offered = self._offered.pop(thread_id, None)
        if offered is None or not offered[0] or offered[0] != conf.get(FENCE_KEY):
            return None
        return offered[1]

    def _drop_offers(self, thread_ids: Sequence[str] | None) -> None:
        """Before any write (of these threads; None: of any): what was read ahead is no longer
        the latest."""
        if thread_ids is None:
            self._offered.clear()
            return
        for thread_id in thread_ids:
            self._offered.pop(str(thread_id), None)

    def _to_tuple(self, thread_id: Any, entry: list[Any]) -> CheckpointTuple:
        member, raw_checkpoint, raw_meta, parent, refs, blobs, raw_writes = entry
        ns, checkpoint_id = member.decode().split("\0", 1)
        checkpoint: Checkpoint = self._undump(raw_checkpoint)
        channels = refs.split(b"\0")[::2] if refs else []
        values: dict[str, Any] = {}
        for channel, raw in zip(channels, blobs, strict=True):
            if raw is None:
                continue
            kind, data = _split_typed(raw)
            if kind != "empty":
                values[channel.decode()] = self.serde.loads_typed((kind, data))
        writes: list[tuple[tuple[str, str, int], PendingWrite]] = []
        for raw in raw_writes:
            if raw is None:
                continue
            task, idx, channel, path, kind, data = raw.split(b"\0", 5)
            task_id, channel_name = task.decode(), channel.decode()
            value = self.serde.loads_typed((kind.decode(), data))
            order = writes_sort_key(path.decode(), task_id, int(idx))
            writes.append((order, (task_id, channel_name, value)))
        writes.sort(key=lambda item: item[0])
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self._undump(raw_meta),
            parent_config=_config(thread_id, ns, parent.decode()) if parent else None,
            pending_writes=[write for _, write in writes],
        )

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        remaining = limit
        if remaining is not None and remaining <= 0:
            return
        before_id = get_checkpoint_id(before) if before else None
        if config is not None:
            conf = config["configurable"]
            ns = conf.get("checkpoint_ns")
            threads: AsyncIterator[Any] = _one(conf["thread_id"])
            checkpoint_id = get_checkpoint_id(config)
        else:
            ns, checkpoint_id = None, None
            threads = self._scan_threads()
        async for thread_id in threads:
            listing = self._list_thread(thread_id, ns, checkpoint_id, before_id, filter, remaining)
            async with contextlib.aclosing(listing) as found:
                async for tup in found:
                    yield tup
                    if remaining is not None:
                        remaining -= 1
                        if remaining <= 0:
                            return

    async def _scan_threads(self) -> AsyncIterator[str]:
        head = f"{self._keys.prefix}{{"
        tail = "}:cp:idx"
        pattern = _glob_escape(head) + "*" + _glob_escape(tail)
        with redis_errors("checkpoint list"):
            async for key in self._r.scan_iter(match=pattern, count=500):
                yield key.decode()[len(head) : -len(tail)]

    async def _list_thread(
        self,
        thread_id: Any,
        ns: str | None,
        checkpoint_id: str | None,
        before_id: str | None,
        filter: dict[str, Any] | None,
        limit: int | None,
    ) -> AsyncGenerator[CheckpointTuple, None]:
        keys = self._thread_keys(str(thread_id))
        async for page in self._pages(keys, ns, checkpoint_id, before_id):
            if filter:
                page = await self._matching(keys, page, filter)
            while page:
                size = _LOAD_BATCH if limit is None else max(1, min(_LOAD_BATCH, limit))
                batch, page = page[:size], page[size:]
                with redis_errors("checkpoint list"):
                    entries = await self._load(keys=keys, args=["ids", *batch])
                for entry in entries:
                    if entry:
                        yield self._to_tuple(thread_id, entry)
                        if limit is not None:
                            limit -= 1

    async def _pages(
        self, keys: list[str], ns: str | None, checkpoint_id: str | None, before_id: str | None
    ) -> AsyncIterator[list[bytes]]:
        """Members to list, newest first, in pages."""
        if ns is not None:
            ns = _plain(ns, "namespace")
        if checkpoint_id is not None:
            checkpoint_id = _plain(checkpoint_id, "id")
            if before_id is not None and checkpoint_id >= before_id:
                return
            if ns is not None:
                yield [f"{ns}\0{checkpoint_id}".encode()]
                return
        if ns is None:
            with redis_errors("checkpoint list"):
                members = await self._r.zrange(keys[0], 0, -1)
            # redis-py types ZRANGE's reply for withscores=True as well; without it, members only
            found = [
                (m.split(b"\0", 1)[1].decode(), m)
                for m in map(_raw, cast("list[bytes | str]", members))
            ]
            chosen = sorted(
                (
                    (cid, m)
                    for cid, m in found
                    if (checkpoint_id is None or cid == checkpoint_id)
                    and (before_id is None or cid < before_id)
                ),
                key=lambda item: (item[0], item[1]),
                reverse=True,
            )
            for start in range(0, len(chosen), _PAGE):
                yield [m for _, m in chosen[start : start + _PAGE]]
            return
        high: str | bytes = f"({ns}\0{_plain(before_id, 'id')}" if before_id else f"({ns}\1"
        low = f"({ns}\0"
        while True:
            with redis_errors("checkpoint list"):
                page = [
                    _raw(m)
                    for m in await self._r.zrevrangebylex(keys[0], high, low, start=0, num=_PAGE)
                ]
            if not page:
                return
            yield page
            if len(page) < _PAGE:
                return
            high = b"(" + page[-1]

    async def _matching(
        self, keys: list[str], members: list[bytes], filter: dict[str, Any]
    ) -> list[bytes]:
        with redis_errors("checkpoint list"):
            raw = await self._r.hmget(keys[1], [m + b"\0m" for m in members])
        chosen = []
        for member, meta_raw in zip(members, raw, strict=True):
            if meta_raw is None:
                continue
            meta = self._undump(_raw(meta_raw))
            if all(meta.get(k) == v for k, v in filter.items()):
                chosen.append(member)
        return chosen

    # --- deletion, copy, prune --------------------------------------------------------------

    async def adelete_thread(self, thread_id: str) -> None:
        tid = str(thread_id)
        self._drop_offers([tid])
        with redis_errors("checkpoint delete_thread"):
            await self._r.delete(*self._thread_keys(tid))
        _log.info("checkpoint.thread_deleted", thread_id=tid)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Walks every thread (SCAN), since no per-run key points at them: an admin path that
        LangGraph servers use for rollbacks, never a turn's."""
        runs = list(dict.fromkeys(_plain(r, "run id") for r in run_ids))
        if not runs:
            return
        self._drop_offers(None)
        threads = deleted = 0
        with redis_errors("checkpoint delete_for_runs"):
            async for tid in self._scan_threads():
                threads += 1
                deleted += int(
                    await self._delete(keys=self._thread_keys(tid), args=["runs", *runs])
                )
        _log.info("checkpoint.runs_deleted", runs=len(runs), threads=threads, checkpoints=deleted)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Add every checkpoint, write and blob of the source to the target (ids unchanged)."""
        src, dst = str(source_thread_id), str(target_thread_id)
        if src == dst:
            return
        self._drop_offers([dst])
        src_keys, dst_keys = self._thread_keys(src), self._thread_keys(dst)
        with redis_errors("checkpoint copy_thread"):
            read = self._r.pipeline(transaction=True)
            for key in src_keys:
                if key.endswith(("idx", "widx", "ridx")):
                    read.zrange(key, 0, -1)
                else:
                    read.hgetall(key)
            idx, chk, blob, wr, widx, ridx = await read.execute()
            if not idx:
                return
            write = self._r.pipeline(transaction=True)
            for key, mapping in ((dst_keys[1], chk), (dst_keys[2], blob), (dst_keys[3], wr)):
                if mapping:
                    write.hset(key, mapping=mapping)
            for key, members in ((dst_keys[0], idx), (dst_keys[4], widx), (dst_keys[5], ridx)):
                if members:
                    write.zadd(key, dict.fromkeys(members, 0))
            for key in dst_keys:
                if self._ttl:
                    write.expire(key, self._ttl)
                else:
                    write.persist(key)
            await write.execute()
        _log.info("checkpoint.thread_copied", source=src, target=dst, checkpoints=len(idx))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest` keeps each namespace's newest checkpoint (plus the ancestors its
        DeltaChannels replay from); `delete` removes the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}")
        self._drop_offers([str(t) for t in thread_ids])
        for thread_id in thread_ids:
            if strategy == "delete":
                await self.adelete_thread(thread_id)
                continue
            with redis_errors("checkpoint prune"):
                await self._keep_latest(str(thread_id))

    async def _keep_latest(self, thread_id: str) -> None:
        keys = self._thread_keys(thread_id)
        # redis-py types ZRANGE's reply for withscores=True as well; without it, members only
        zrange = cast("list[bytes | str]", await self._r.zrange(keys[0], 0, -1))
        members = [_raw(m) for m in zrange]
        latest: dict[bytes, bytes] = {}
        for member in members:
            ns = member.split(b"\0", 1)[0]
            if member > latest.get(ns, b""):
                latest[ns] = member
        keep = set(latest.values())
        for member in latest.values():
            keep |= await self._delta_ancestors(keys, member)
        drop = [m for m in members if m not in keep]
        if not drop:
            return
        await self._delete(keys=keys, args=["members", *drop])
        _log.info("checkpoint.thread_pruned", thread_id=thread_id, dropped=len(drop))

    async def _delta_ancestors(self, keys: list[str], head: bytes) -> set[bytes]:
        """Ancestors a DeltaChannel replays from: up to the nearest stored value per channel.

        Delta channels with history to replay are the ones counted in the head's metadata
        (`counters_since_delta_snapshot`) whose value is not stored at the head itself.
        """
        raw_meta, refs, parent = map(
            _maybe_raw,
            await self._r.hmget(keys[1], [head + b"\0m", head + b"\0r", head + b"\0p"]),
        )
        if raw_meta is None:
            return set()
        counters = self._undump(raw_meta).get("counters_since_delta_snapshot") or {}
        needed = set(counters) - await self._stored_channels(keys, head, refs, set(counters))
        ns = head.split(b"\0", 1)[0]
        kept: set[bytes] = set()
        while needed and parent:
            member = ns + b"\0" + parent
            refs, parent = map(
                _maybe_raw, await self._r.hmget(keys[1], [member + b"\0r", member + b"\0p"])
            )
            if refs is None:
                break
            kept.add(member)
            needed -= await self._stored_channels(keys, member, refs, needed)
        return kept

    async def _stored_channels(
        self, keys: list[str], member: bytes, refs: bytes | None, wanted: set[str]
    ) -> set[str]:
        if not refs or not wanted:
            return set()
        ns = member.split(b"\0", 1)[0]
        parts = refs.split(b"\0")
        pairs = [
            (parts[i].decode(), ns + b"\0" + parts[i] + b"\0" + parts[i + 1])
            for i in range(0, len(parts), 2)
            if parts[i].decode() in wanted
        ]
        if not pairs:
            return set()
        raw = await self._r.hmget(keys[2], [field for _, field in pairs])
        return {ch for (ch, _), value in zip(pairs, raw, strict=True) if value and value != _EMPTY}

    # --- versions and the sync API ----------------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Same scheme as InMemorySaver: zero-padded counter plus a random tiebreak."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        raise NotImplementedError(_ASYNC_ONLY)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        raise NotImplementedError(_ASYNC_ONLY)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        raise NotImplementedError(_ASYNC_ONLY)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        raise NotImplementedError(_ASYNC_ONLY)

    def delete_thread(self, thread_id: str) -> None:
        raise NotImplementedError(_ASYNC_ONLY)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        raise NotImplementedError(_ASYNC_ONLY)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        raise NotImplementedError(_ASYNC_ONLY)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        raise NotImplementedError(_ASYNC_ONLY)


async def _one(value: Any) -> AsyncIterator[Any]:
    yield value


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
