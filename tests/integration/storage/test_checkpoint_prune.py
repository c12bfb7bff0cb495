"""Pruning on write (`RedisCheckpointSaver(keep=…)`): a thread holds its newest checkpoint (with its
pending writes) plus `keep` earlier ones, whatever its length; pruning is part of the fenced put, so
a writer that lost the lock prunes nothing, and a resent put changes nothing."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
import redis.asyncio as aioredis
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from storage import Keys, RedisCheckpointSaver, connect
from storage.checkpoint import FENCE_KEY, FencedOut
from storage.thread_queue import SlotState, ThreadQueue
from tests.integration.storage.test_checkpoint import _checkpoint, _config, _put

__all__: list[str] = []


async def _steps(saver: RedisCheckpointSaver, thread: str = "t", ns: str = "") -> list[int]:
    return [t.metadata["step"] async for t in saver.alist(_config(thread, ns))]


async def _chain(saver: RedisCheckpointSaver, count: int, **kw: Any) -> dict[str, Any]:
    """`count` checkpoints in a row, each a new version of `a` (a new run each)."""
    parent: str | None = None
    stored: dict[str, Any] = {}
    for n in range(1, count + 1):
        stored = await _put(
            saver,
            "t",
            n,
            {"a": f"a{n}", "b": "b"},
            parent=parent,
            versions={"a": n, "b": 1},
            new_versions={"a": n, "b": 1} if n == 1 else {"a": n},
            run_id=f"run-{n}",
            **kw,
        )
        parent = stored["configurable"]["checkpoint_id"]
    return stored


async def test_each_write_leaves_only_the_newest_checkpoint_and_the_blobs_it_references(
    redis: aioredis.Redis, prefix: str, keys: Keys
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)

    await _chain(saver, 5)

    assert await _steps(saver) == [5]
    blobs = {f.decode() for f in await redis.hkeys(keys.checkpoint("t", "blob"))}
    assert blobs == {"\0a\x005", "\0b\x001"}
    runs = await redis.zrange(keys.checkpoint("t", "ridx"), 0, -1)
    assert [r.split(b"\0", 1)[0] for r in runs] == [b"run-5"]
    assert await redis.hlen(keys.checkpoint("t", "chk")) == 5  # one record's five fields
    latest = await saver.aget_tuple(_config("t"))
    assert latest is not None and latest.checkpoint["channel_values"] == {"a": "a5", "b": "b"}


async def test_keep_leaves_that_many_earlier_checkpoints(
    redis: aioredis.Redis, prefix: str
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=2)

    await _chain(saver, 6)

    assert await _steps(saver) == [6, 5, 4]
    oldest = await saver.aget_tuple(_config("t", checkpoint_id=f"1ef{4:013d}"))
    assert oldest is not None and oldest.checkpoint["channel_values"]["a"] == "a4"


async def test_the_latest_checkpoints_pending_writes_stay_until_a_newer_checkpoint_replaces_it(
    redis: aioredis.Redis, prefix: str, keys: Keys
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    latest = await _chain(saver, 2)
    await saver.aput_writes(latest, [("a", "waiting")], "task")

    found = await saver.aget_tuple(_config("t"))
    assert found is not None and found.pending_writes == [("task", "a", "waiting")]

    await _put(saver, "t", 3, {"a": "a3"}, parent=latest["configurable"]["checkpoint_id"])
    assert await _steps(saver) == [3]
    assert await redis.hlen(keys.checkpoint("t", "wr")) == 0
    assert await redis.zcard(keys.checkpoint("t", "widx")) == 0


async def test_writes_that_arrive_after_their_checkpoint_was_pruned_go_with_the_next_write(
    redis: aioredis.Redis, prefix: str, keys: Keys
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    first = await _chain(saver, 1)
    second = await _put(saver, "t", 2, {"a": "a2"}, parent=first["configurable"]["checkpoint_id"])
    await saver.aput_writes(first, [("a", "late")], "task")  # its checkpoint is gone already
    await saver.aput_writes(second, [("a", "kept")], "task")

    await _put(saver, "t", 3, {"a": "a3"}, parent=second["configurable"]["checkpoint_id"])

    assert await redis.hlen(keys.checkpoint("t", "wr")) == 0
    third = await saver.aput_writes(
        {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": f"1ef{3:013d}"}},
        [("a", "now")],
        "task",
    )
    assert third is None
    found = await saver.aget_tuple(_config("t"))
    assert found is not None and found.pending_writes == [("task", "a", "now")]


async def test_a_namespace_prunes_only_its_own_checkpoints(
    redis: aioredis.Redis, prefix: str
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    await _put(saver, "t", 1, {"c": 1}, ns="child:1")
    await _put(saver, "t", 2, {"c": 2}, ns="child:1")

    await _chain(saver, 3)

    assert await _steps(saver, ns="child:1") == [2]
    assert await _steps(saver) == [3]
    child = await saver.aget_tuple(_config("t", "child:1"))
    assert child is not None and child.checkpoint["channel_values"] == {"c": 2}


async def test_a_checkpoint_replayed_by_a_delta_channel_is_not_pruned_on_write(
    redis: aioredis.Redis, prefix: str
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    await _chain(saver, 2)

    await _put(saver, "t", 3, {}, counters_since_delta_snapshot={"d": [1, 1]})

    assert await _steps(saver) == [3, 2]


async def test_a_resent_put_leaves_the_same_single_checkpoint(
    redis: aioredis.Redis, prefix: str, keys: Keys
) -> None:
    """redis-py resends a command after a lost reply; the second run of the script is harmless."""
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    second = await _chain(saver, 2)
    cp = _checkpoint(3, {"a": "a3", "b": "b"}, {"a": 3, "b": 1})
    meta: Any = {"source": "loop", "step": 3, "parents": {}, "run_id": "run-3"}
    config = _config("t", checkpoint_id=second["configurable"]["checkpoint_id"])
    await saver.aput(config, cp, meta, {"a": 3})
    before = {s: await redis.dump(keys.checkpoint("t", s)) for s in ("idx", "chk", "blob", "ridx")}

    await saver.aput(config, cp, meta, {"a": 3})

    assert await _steps(saver) == [3]
    for suffix, dumped in before.items():
        assert await redis.dump(keys.checkpoint("t", suffix)) == dumped, suffix


async def test_a_writer_that_lost_the_lock_prunes_nothing(
    redis: aioredis.Redis, prefix: str, keys: Keys
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    holder = uuid.uuid4().hex
    slot = await ThreadQueue(redis, keys=keys).submit("t", "1-0", b"{}", holder)
    assert slot.state is SlotState.RUN
    await _chain(saver, 2)
    kept = await saver.aget_tuple(_config("t"))
    assert kept is not None
    await saver.aput_writes(kept.config, [("a", "answer pending")], "task")

    stale = _config("t", checkpoint_id=kept.config["configurable"]["checkpoint_id"])
    stale["configurable"][FENCE_KEY] = uuid.uuid4().hex
    cp = {**kept.checkpoint, "id": f"1ef{9:013d}", "channel_values": {"a": "forked"}}
    with pytest.raises(FencedOut):
        await saver.aput(stale, cp, {"source": "loop", "step": 9, "parents": {}}, {"a": 9})

    after = await saver.aget_tuple(_config("t"))
    assert after is not None
    assert after.checkpoint["id"] == kept.checkpoint["id"]
    assert after.pending_writes == [("task", "a", "answer pending")]


class _Asking(TypedDict):
    log: Annotated[list[str], operator.add]


def _asking_graph(saver: RedisCheckpointSaver) -> Any:
    def ask(state: _Asking) -> dict[str, Any]:
        return {"log": [f"answer:{interrupt('Which one?')}"]}

    builder = StateGraph(_Asking)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=saver)


async def test_a_question_asked_on_a_pruned_thread_is_resumed_by_another_process(
    redis_url: str, redis_cluster: bool, prefix: str, keys: Keys, redis: aioredis.Redis
) -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    for turn in ("one", "two"):
        saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
        await _asking_graph(saver).ainvoke({"log": [turn]}, config, durability="exit")
        other = connect(redis_url, cluster=redis_cluster)  # a fresh client, as after a restart
        try:
            resumed = RedisCheckpointSaver(other, prefix=prefix, keep=0)
            out = await _asking_graph(resumed).ainvoke(
                Command(resume=f"a-{turn}"), config, durability="exit"
            )
        finally:
            await other.aclose()
        assert out["log"][-2:] == [turn, f"answer:a-{turn}"]
        assert len(await _steps(saver)) == 1

    assert out["log"] == ["one", "answer:a-one", "two", "answer:a-two"]
    assert await redis.zcard(keys.checkpoint("t", "widx")) == 0


async def test_a_thread_written_before_pruning_shrinks_a_bounded_step_per_write(
    redis: aioredis.Redis, prefix: str
) -> None:
    await _chain(RedisCheckpointSaver(redis, prefix=prefix), 300)  # no pruning: all 300 stay
    saver = RedisCheckpointSaver(redis, prefix=prefix, keep=0)
    latest = await saver.aget_tuple(_config("t"))
    assert latest is not None

    await _put(
        saver, "t", 301, {"a": "a301"}, parent=latest.config["configurable"]["checkpoint_id"]
    )
    assert len(await _steps(saver)) == 301 - 256
    await _put(saver, "t", 302, {"a": "a302"}, parent=f"1ef{301:013d}")
    assert await _steps(saver) == [302]
