"""The checkpoint fence with a real graph: a writer whose lock token no longer holds the thread lock
writes nothing, so a worker that lost its lock cannot fork the thread's history."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
import redis.asyncio as aioredis
from langgraph.graph import START, StateGraph

from storage import Keys, RedisCheckpointSaver
from storage.checkpoint import FENCE_KEY, FencedOut
from storage.thread_queue import SlotState, ThreadQueue

__all__: list[str] = []

T = "fenced-thread"


class _State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(checkpointer: RedisCheckpointSaver) -> Any:
    def step(state: _State) -> dict[str, Any]:
        return {"log": ["step"]}

    builder = StateGraph(_State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=checkpointer)


def _config(fence: str | None = None, *, run: bool = False) -> dict[str, Any]:
    """With `run`, as the runtime does: a run id, so the saver also indexes the run."""
    configurable: dict[str, str] = {"thread_id": T}
    if fence is not None:
        configurable[FENCE_KEY] = fence
    config: dict[str, Any] = {"configurable": configurable}
    if run:
        run_id = str(uuid.uuid4())
        config["run_id"] = uuid.UUID(run_id)
        config["metadata"] = {"run_id": run_id}
    return config


async def _hold(redis: aioredis.Redis, keys: Keys, token: str) -> None:
    """Take the thread lock as a worker does (submit a message with our token)."""
    slot = await ThreadQueue(redis, keys=keys).submit(T, "1-0", b"{}", token)
    assert slot.state is SlotState.RUN


async def _snapshot(saver: RedisCheckpointSaver) -> tuple[Any, ...] | None:
    found = await saver.aget_tuple(_config())  # type: ignore[arg-type]
    if found is None:
        return None
    return (
        found.checkpoint["id"],
        found.checkpoint["channel_values"],
        found.pending_writes,
        len([c async for c in saver.alist(_config())]),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("run", [False, True], ids=["no-run-id", "run-id"])
async def test_a_run_holding_the_lock_writes_its_checkpoints(
    redis: aioredis.Redis, keys: Keys, prefix: str, run: bool
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix)
    await _hold(redis, keys, "tok-a")
    result = await _graph(saver).ainvoke({"log": ["in"]}, _config("tok-a", run=run))
    assert result == {"log": ["in", "step"]}

    stored = await saver.aget_tuple(_config())  # type: ignore[arg-type]
    assert stored is not None
    assert stored.checkpoint["channel_values"]["log"] == ["in", "step"]
    assert await redis.exists(keys.checkpoint(T, "ridx")) == int(run)  # the run index was written


@pytest.mark.parametrize("run", [False, True], ids=["no-run-id", "run-id"])
@pytest.mark.parametrize("holder", ["tok-b", None], ids=["another-holder", "no-holder"])
async def test_a_run_whose_token_does_not_hold_the_lock_is_fenced_out_and_writes_nothing(
    redis: aioredis.Redis, keys: Keys, prefix: str, holder: str | None, run: bool
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix)
    graph = _graph(saver)
    await _hold(redis, keys, "tok-a")
    await graph.ainvoke({"log": ["first"]}, _config("tok-a", run=run))  # history to protect
    before = await _snapshot(saver)
    assert before is not None
    await redis.delete(keys.lock(T))  # tok-a's lock expired ...
    if holder is not None:
        await _hold(redis, keys, holder)  # ... and another worker took the thread

    with pytest.raises(FencedOut):
        await graph.ainvoke({"log": ["second"]}, _config("tok-a", run=run))
    assert await _snapshot(saver) == before


@pytest.mark.parametrize("run", [False, True], ids=["no-run-id", "run-id"])
async def test_a_fenced_out_first_run_leaves_the_thread_without_checkpoints(
    redis: aioredis.Redis, keys: Keys, prefix: str, run: bool
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=prefix)
    await _hold(redis, keys, "tok-b")
    with pytest.raises(FencedOut):
        await _graph(saver).ainvoke({"log": ["in"]}, _config("tok-a", run=run))
    assert await saver.aget_tuple(_config()) is None  # type: ignore[arg-type]
    # (pending writes, `cp:wr`/`cp:widx`, are not fenced: only checkpoints are)
    for suffix in ("idx", "chk", "blob", "ridx"):
        assert await redis.exists(keys.checkpoint(T, suffix)) == 0


async def test_without_a_fence_the_lock_is_not_consulted(
    redis: aioredis.Redis, keys: Keys, prefix: str
) -> None:
    # Tools, the CLI and tests write without a fence: no lock is required.
    saver = RedisCheckpointSaver(redis, prefix=prefix)
    await _hold(redis, keys, "tok-b")
    await _graph(saver).ainvoke({"log": ["in"]}, _config())
    assert await saver.aget_tuple(_config()) is not None  # type: ignore[arg-type]
