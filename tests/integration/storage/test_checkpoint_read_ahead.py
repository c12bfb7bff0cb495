"""The checkpoint read a turn sends with its submit (issue 30): one round trip fewer per turn, and
never a stale read, on a real server."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis

from storage import Keys, RedisCheckpointSaver, SlotState, ThreadQueue
from tests.round_trips import counting_client

__all__: list[str] = []

THREAD = "0123456789abcdef0123456789abcdef"


def _config(fence: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": THREAD, "checkpoint_ns": ""}
    if fence:
        conf["fence"] = fence
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


async def _put(saver: RedisCheckpointSaver, n: int, *, fence: str = "") -> str:
    checkpoint: Any = {
        "v": 1,
        "id": f"1ef{n:013d}",
        "ts": "2025-01-01T00:00:00+00:00",
        "channel_values": {"messages": [f"turn {n}"]},
        "channel_versions": {"messages": n},
        "versions_seen": {},
        "pending_sends": [],
        "updated_channels": None,
    }
    meta: Any = {"source": "loop", "step": n, "parents": {}}
    await saver.aput(_config(fence), checkpoint, meta, {"messages": n})
    return str(checkpoint["id"])


def _stores(client: aioredis.Redis, prefix: str) -> tuple[RedisCheckpointSaver, ThreadQueue]:
    saver = RedisCheckpointSaver(client, prefix=prefix)
    return saver, ThreadQueue(client, keys=Keys(prefix), checkpoints=saver)


@pytest.fixture
def single_node(redis_cluster: bool) -> None:
    if redis_cluster:
        pytest.skip("a cluster client talks to every node directly; one proxy cannot count it")


@pytest.mark.usefixtures("single_node")
async def test_a_submit_that_takes_the_lock_brings_the_runs_first_read_in_its_round_trip(
    redis_url: str, prefix: str
) -> None:
    async with counting_client(redis_url) as (client, proxy):
        saver, queue = _stores(client, prefix)
        latest = await _put(saver, 2)
        await queue.submit("f" * 32, "1-0", b"warm-up", "token-w")  # connected, scripts loaded
        proxy.requests = 0
        slot = await queue.submit(THREAD, "1-0", b"hello", "token-a")
        assert slot.state is SlotState.RUN and proxy.requests == 1
        found = await saver.aget_tuple(_config(fence="token-a"))
        assert found is not None and found.checkpoint["id"] == latest
        assert found.checkpoint["channel_values"] == {"messages": ["turn 2"]}
        assert proxy.requests == 1  # the run read nothing more
        await saver.aget_tuple(_config(fence="token-a"))
        assert proxy.requests == 2  # taken once: a second read goes to Redis


@pytest.mark.usefixtures("single_node")
async def test_a_queued_submit_or_another_lock_gets_nothing_read_ahead(
    redis_url: str, prefix: str
) -> None:
    async with counting_client(redis_url) as (client, proxy):
        saver, queue = _stores(client, prefix)
        await _put(saver, 1)
        assert (await queue.submit(THREAD, "1-0", b"first", "token-a")).state is SlotState.RUN
        assert (await queue.submit(THREAD, "2-0", b"second", "token-b")).state is SlotState.QUEUED
        proxy.requests = 0
        assert await saver.aget_tuple(_config(fence="token-b")) is not None
        assert proxy.requests == 1  # the queued submit offered nothing
        proxy.requests = 0
        assert await saver.aget_tuple(_config(fence="token-a")) is not None
        assert proxy.requests == 1  # token-a's offer was dropped, unread, by the read above


async def test_a_write_after_the_read_ahead_is_what_the_next_read_sees(
    redis: aioredis.Redis, prefix: str
) -> None:
    saver, queue = _stores(redis, prefix)
    await _put(saver, 1)
    assert (await queue.submit(THREAD, "1-0", b"hello", "token-a")).state is SlotState.RUN
    newer = await _put(saver, 2, fence="token-a")
    found = await saver.aget_tuple(_config(fence="token-a"))
    assert found is not None and found.checkpoint["id"] == newer


async def test_an_offer_from_an_earlier_lock_is_never_taken(
    redis: aioredis.Redis, prefix: str
) -> None:
    saver, queue = _stores(redis, prefix)
    await _put(saver, 1)
    assert (await queue.submit(THREAD, "1-0", b"hello", "token-a")).state is SlotState.RUN
    # another process writes the thread under a later lock; this process never hears of it
    other = RedisCheckpointSaver(redis, prefix=prefix)
    await redis.set(Keys(prefix).lock(THREAD), "token-b")
    newer = await _put(other, 2, fence="token-b")
    found = await saver.aget_tuple(_config(fence="token-b"))
    assert found is not None and found.checkpoint["id"] == newer


async def test_an_empty_thread_read_ahead_is_an_empty_thread(
    redis: aioredis.Redis, prefix: str
) -> None:
    saver, queue = _stores(redis, prefix)
    assert (await queue.submit(THREAD, "1-0", b"hello", "token-a")).state is SlotState.RUN
    assert await saver.aget_tuple(_config(fence="token-a")) is None
