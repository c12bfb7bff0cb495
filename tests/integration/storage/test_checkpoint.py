"""RedisCheckpointSaver on a real server: the official conformance suite, plus the storage rules
it cannot see (atomic puts, per-thread keys, whole-thread TTL, blob GC, DeltaChannel-aware prune)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from langgraph.checkpoint.base import ChannelVersions
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT

from storage import Keys, RedisCheckpointSaver
from switchboard.errors import StorageError

__all__: list[str] = []


def _config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _checkpoint(
    n: int, values: dict[str, Any], versions: ChannelVersions | None = None
) -> dict[str, Any]:
    """Ids sort in creation order, like uuid6 ids; `n` keeps them readable."""
    return {
        "v": 1,
        "id": f"1ef{n:013d}",
        "ts": "2025-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions if versions is not None else dict.fromkeys(values, 1),
        "versions_seen": {},
        "pending_sends": [],
        "updated_channels": None,
    }


async def _put(
    saver: Any,
    thread_id: str,
    n: int,
    values: dict[str, Any],
    *,
    parent: str | None = None,
    ns: str = "",
    versions: ChannelVersions | None = None,
    new_versions: ChannelVersions | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    cp = _checkpoint(n, values, versions)
    meta = {"source": "loop", "step": n, "parents": {}, **metadata}
    new = new_versions if new_versions is not None else cp["channel_versions"]
    return await saver.aput(_config(thread_id, ns, parent), cp, meta, new)


async def _thread_keys(client: aioredis.Redis, prefix: str) -> set[str]:
    return {k.decode() async for k in client.scan_iter(match=f"{prefix}*", count=500)}


@pytest.fixture
def saver(redis: aioredis.Redis, prefix: str) -> RedisCheckpointSaver:
    return RedisCheckpointSaver(redis, prefix=prefix)


@pytest.mark.parametrize("ttl_s", [None, 3600], ids=["no-ttl", "ttl"])
async def test_conformance_suite_reports_full_with_every_capability(
    redis: aioredis.Redis, prefix: str, ttl_s: int | None
) -> None:
    @checkpointer_test(name=f"RedisCheckpointSaver[{ttl_s}]")
    async def factory() -> AsyncIterator[RedisCheckpointSaver]:
        yield RedisCheckpointSaver(redis, prefix=prefix, ttl_s=ttl_s)

    report = await validate(factory)

    failing = {name: r.failures for name, r in report.results.items() if r.passed is not True}
    assert report.conformance_level() == "FULL", failing
    assert set(report.results) == {cap.value for cap in ALL_CAPABILITIES}
    for name, result in report.results.items():
        assert result.detected, name
        assert result.passed is True, (name, result.failures)
        assert result.tests_passed > 0 and result.tests_failed == 0, name


async def test_writes_are_visible_only_with_their_checkpoint(saver: RedisCheckpointSaver) -> None:
    first = await _put(saver, "t", 1, {"a": 1})
    await saver.aput_writes(first, [("a", 2)], "task-1")
    second = await _put(saver, "t", 2, {"a": 2}, parent=first["configurable"]["checkpoint_id"])

    latest = await saver.aget_tuple(_config("t"))
    older = await saver.aget_tuple(first)

    assert latest is not None and older is not None
    assert latest.config["configurable"]["checkpoint_id"] == second["configurable"]["checkpoint_id"]
    assert latest.pending_writes == []
    assert older.pending_writes == [("task-1", "a", 2)]
    listed = {t.config["configurable"]["checkpoint_id"]: t async for t in saver.alist(_config("t"))}
    assert listed[first["configurable"]["checkpoint_id"]].pending_writes == [("task-1", "a", 2)]
    assert listed[second["configurable"]["checkpoint_id"]].pending_writes == []


async def test_failed_put_leaves_no_visible_checkpoint(
    saver: RedisCheckpointSaver, redis: aioredis.Redis, keys: Keys
) -> None:
    """The script writes blobs before the checkpoint, so a failure on them exposes nothing."""
    await redis.set(keys.checkpoint("t", "blob"), "not a hash")

    with pytest.raises(StorageError):
        await _put(saver, "t", 1, {"a": "value"})

    assert await saver.aget_tuple(_config("t")) is None
    assert await saver.aget_tuple(_config("t", checkpoint_id=_checkpoint(1, {})["id"])) is None
    assert [t async for t in saver.alist(_config("t"))] == []


async def test_pending_writes_follow_in_memory_saver_rules(saver: RedisCheckpointSaver) -> None:
    """Regular writes keep the first value per (task, idx); special ones overwrite; order is
    (task_path, task_id, idx) — the same results as InMemorySaver for the same calls."""
    memory = InMemorySaver()
    results = []
    for impl in (saver, memory):
        stored = await _put(impl, "t", 1, {})
        await impl.aput_writes(stored, [("a", "first"), ("b", 1)], "task-b", "~path/2")
        await impl.aput_writes(stored, [("a", "again"), ("b", 2)], "task-b", "~path/2")
        await impl.aput_writes(stored, [(ERROR, "boom")], "task-a", "~path/1")
        await impl.aput_writes(stored, [(ERROR, "boom twice"), (INTERRUPT, {"q": 1})], "task-a")
        await impl.aput_writes(stored, [("c", None)], "task-c", "~path/0")
        tup = await impl.aget_tuple(stored)
        assert tup is not None
        results.append(tup.pending_writes)

    assert results[0] == results[1]
    assert ("task-a", ERROR, "boom twice") in results[0]
    assert ("task-b", "a", "first") in results[0]


async def test_reads_match_in_memory_saver_for_incremental_channel_versions(
    saver: RedisCheckpointSaver,
) -> None:
    memory = InMemorySaver()
    found = []
    for impl in (saver, memory):
        one = await _put(impl, "t", 1, {"a": [1], "b": {"x": 1}})
        two = await _put(
            impl,
            "t",
            2,
            {"a": [1, 2], "b": {"x": 1}},
            parent=one["configurable"]["checkpoint_id"],
            versions={"a": 2, "b": 1},
            new_versions={"a": 2},
        )
        await _put(
            impl,
            "t",
            3,
            {"b": {"x": 1}},
            parent=two["configurable"]["checkpoint_id"],
            versions={"a": 3, "b": 1},
            new_versions={"a": 3},
        )
        found.append(
            [(t.checkpoint["channel_values"], t.metadata["step"]) async for t in impl.alist(None)]
        )

    assert found[0] == found[1]
    assert found[0][0] == ({"b": {"x": 1}}, 3)


async def test_list_without_namespace_covers_every_namespace_newest_first(
    saver: RedisCheckpointSaver,
) -> None:
    await _put(saver, "t", 1, {}, ns="")
    await _put(saver, "t", 2, {}, ns="child:1")
    await _put(saver, "t", 3, {}, ns="")
    await _put(saver, "t", 4, {}, ns="child:10")

    listed = [
        (t.config["configurable"]["checkpoint_ns"], t.metadata["step"])
        async for t in saver.alist({"configurable": {"thread_id": "t"}})
    ]
    limited = [
        t.metadata["step"]
        async for t in saver.alist(
            {"configurable": {"thread_id": "t"}},
            before=_config("t", "", _checkpoint(4, {})["id"]),
            limit=2,
        )
    ]
    only_child = [t.metadata["step"] async for t in saver.alist(_config("t", "child:1"))]

    assert listed == [("child:10", 4), ("", 3), ("child:1", 2), ("", 1)]
    assert limited == [3, 2]
    assert only_child == [2]


async def test_list_pages_past_one_batch_with_filter_and_limit(saver: RedisCheckpointSaver) -> None:
    parent = None
    for n in range(1, 301):
        stored = await _put(saver, "t", n, {}, parent=parent, source="input" if n % 3 else "loop")
        parent = stored["configurable"]["checkpoint_id"]

    loops = [t.metadata["step"] async for t in saver.alist(_config("t"), filter={"source": "loop"})]
    newest = [t.metadata["step"] async for t in saver.alist(_config("t"), limit=40)]

    assert loops == list(range(300, 0, -3))
    assert newest == list(range(300, 260, -1))


async def test_list_of_all_threads_sees_only_this_prefix(
    saver: RedisCheckpointSaver, redis: aioredis.Redis
) -> None:
    other = RedisCheckpointSaver(redis, prefix=f"o{uuid.uuid4().hex[:8]}:")
    await _put(saver, "t1", 1, {})
    await _put(saver, "t2", 2, {})
    await _put(other, "t3", 3, {})
    try:
        threads = sorted([t.config["configurable"]["thread_id"] async for t in saver.alist(None)])
        assert threads == ["t1", "t2"]
        assert len([t async for t in saver.alist(None, limit=1)]) == 1
    finally:
        await other.adelete_thread("t3")


async def test_delete_thread_removes_every_key_of_the_thread_and_nothing_else(
    saver: RedisCheckpointSaver, redis: aioredis.Redis, prefix: str
) -> None:
    for thread in ("doomed", "kept"):
        first = await _put(saver, thread, 1, {"a": 1}, run_id="run-1")
        await saver.aput_writes(first, [("a", 2)], "task")
        await _put(saver, thread, 2, {"a": 2}, ns="child:1", run_id=f"run-{thread}")
    before = await _thread_keys(redis, prefix)

    await saver.adelete_thread("doomed")

    after = await _thread_keys(redis, prefix)
    gone = before - after
    assert gone == {k for k in before if "{doomed}" in k}
    assert len(gone) == 6
    assert await saver.aget_tuple(_config("kept")) is not None
    assert await saver.aget_tuple(_config("doomed")) is None


async def test_ttl_is_applied_to_every_key_of_the_thread_and_refreshed_on_write(
    redis: aioredis.Redis, prefix: str, keys: Keys
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, ttl_s=1000)
    stored = await _put(saver, "t", 1, {"a": 1}, run_id="r")
    await saver.aput_writes(stored, [("a", 2)], "task")
    thread_keys = {k for k in await _thread_keys(redis, prefix) if "{t}" in k}
    assert len(thread_keys) == 6
    for key in thread_keys:
        assert 990 < await redis.ttl(key) <= 1000, key

    for key in thread_keys:
        await redis.expire(key, 5)
    await saver.aput_writes(stored, [("b", 3)], "task-2")
    assert all([990 < await redis.ttl(key) <= 1000 for key in thread_keys])

    untimed = RedisCheckpointSaver(redis, prefix=prefix)
    await _put(untimed, "t", 2, {"a": 3}, parent=stored["configurable"]["checkpoint_id"])
    assert all([await redis.ttl(key) == -1 for key in thread_keys])


async def test_prune_drops_blobs_no_kept_checkpoint_references(
    saver: RedisCheckpointSaver, redis: aioredis.Redis, keys: Keys
) -> None:
    one = await _put(saver, "t", 1, {"a": "a1", "b": "b1"})
    two = await _put(
        saver,
        "t",
        2,
        {"a": "a2", "b": "b1"},
        parent=one["configurable"]["checkpoint_id"],
        versions={"a": 2, "b": 1},
        new_versions={"a": 2},
    )
    await saver.aput_writes(one, [("a", "w")], "task")

    await saver.aprune(["t"], strategy="keep_latest")

    fields = {f.decode() for f in await redis.hkeys(keys.checkpoint("t", "blob"))}
    assert fields == {"\0a\x002", "\0b\x001"}
    assert await redis.hlen(keys.checkpoint("t", "wr")) == 0
    latest = await saver.aget_tuple(_config("t"))
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"a": "a2", "b": "b1"}
    assert latest.config == two


async def test_keep_latest_prune_keeps_ancestors_a_delta_channel_replays_from(
    saver: RedisCheckpointSaver,
) -> None:
    """The head stores no value for the delta channel `d`; its parent stores none either; the
    grandparent holds a snapshot. Those three (and their writes) must survive; older ones go."""
    counters = {"d": [2, 2]}
    c1 = await _put(saver, "t", 1, {"d": ["x"]})
    c2 = await _put(
        saver,
        "t",
        2,
        {"d": ["x", "y"]},
        parent=c1["configurable"]["checkpoint_id"],
        versions={"d": 2},
        new_versions={"d": 2},
    )
    c3 = await _put(
        saver,
        "t",
        3,
        {},
        parent=c2["configurable"]["checkpoint_id"],
        versions={"d": 3},
        new_versions={"d": 3},
        counters_since_delta_snapshot={"d": [1, 1]},
    )
    await saver.aput_writes(c3, [("d", "z")], "task-3")
    c4 = await _put(
        saver,
        "t",
        4,
        {},
        parent=c3["configurable"]["checkpoint_id"],
        versions={"d": 4},
        new_versions={"d": 4},
        counters_since_delta_snapshot=counters,
    )

    await saver.aprune(["t"])

    kept = [t.metadata["step"] async for t in saver.alist(_config("t"))]
    assert kept == [4, 3, 2]
    parent = await saver.aget_tuple(c3)
    assert parent is not None and parent.pending_writes == [("task-3", "d", "z")]
    seed = await saver.aget_tuple(c2)
    assert seed is not None and seed.checkpoint["channel_values"] == {"d": ["x", "y"]}
    assert c4 is not None


async def test_delete_for_runs_reaches_copies_in_other_threads(
    saver: RedisCheckpointSaver, redis: aioredis.Redis, keys: Keys
) -> None:
    one = await _put(saver, "src", 1, {"a": 1}, run_id="run-a")
    await _put(
        saver, "src", 2, {"a": 2}, parent=one["configurable"]["checkpoint_id"], run_id="run-b"
    )
    await saver.acopy_thread("src", "dst")

    await saver.adelete_for_runs(["run-a"])

    for thread in ("src", "dst"):
        runs = [t.metadata["run_id"] async for t in saver.alist(_config(thread))]
        assert runs == ["run-b"], thread


async def test_copy_thread_gives_the_target_the_whole_history(saver: RedisCheckpointSaver) -> None:
    one = await _put(saver, "src", 1, {"a": 1})
    two = await _put(
        saver,
        "src",
        2,
        {"a": 2},
        parent=one["configurable"]["checkpoint_id"],
        versions={"a": 2},
        new_versions={"a": 2},
    )
    await saver.aput_writes(two, [("a", 3)], "task")

    await saver.acopy_thread("src", "dst")
    await saver.adelete_thread("src")

    copied = [t async for t in saver.alist(_config("dst"))]
    assert [t.checkpoint["channel_values"] for t in copied] == [{"a": 2}, {"a": 1}]
    assert copied[0].pending_writes == [("task", "a", 3)]
    assert copied[0].parent_config == _config("dst", "", one["configurable"]["checkpoint_id"])


async def test_nul_in_a_namespace_is_rejected(saver: RedisCheckpointSaver) -> None:
    with pytest.raises(ValueError, match="NUL"):
        await _put(saver, "t", 1, {}, ns="bad\0ns")


def test_sync_api_says_to_use_the_async_one(saver: RedisCheckpointSaver) -> None:
    with pytest.raises(NotImplementedError, match="async-only"):
        saver.get_tuple(_config("t"))
    with pytest.raises(NotImplementedError, match="async-only"):
        list(saver.list(_config("t")))
    with pytest.raises(NotImplementedError, match="async-only"):
        saver.put(_config("t"), _checkpoint(1, {}), {}, {})  # type: ignore[arg-type]


def test_next_version_increases_as_strings(saver: RedisCheckpointSaver) -> None:
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    assert first < second
    assert int(second.split(".")[0]) == 2
    assert saver.get_next_version(7, None).startswith(f"{8:032}.")  # type: ignore[arg-type]


@pytest.mark.server_wide  # SCRIPT FLUSH
async def test_puts_and_reads_survive_a_flushed_script_cache(
    saver: RedisCheckpointSaver, redis: aioredis.Redis
) -> None:
    """A restarted server forgets scripts; puts, writes and reads load them again instead of
    failing."""
    await _put(saver, "t", 1, {"a": 1}, run_id="r")
    await redis.script_flush()

    stored = await _put(saver, "t", 2, {"a": 2}, run_id="r")
    await redis.script_flush()
    await saver.aput_writes(stored, [("a", 3)], "task")
    await redis.script_flush()
    latest = await saver.aget_tuple(_config("t"))

    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"a": 2}
    assert latest.pending_writes == [("task", "a", 3)]
