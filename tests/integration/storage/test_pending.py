"""Pending queue against a real server: the cap keeps the newest, drains are atomic and ordered."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import redis.asyncio as aioredis
from structlog.testing import capture_logs

from storage import PENDING_CAP, Keys, PendingMessage, PendingQueue
from tests.integration.storage.racing import warm_pool
from tests.support import wait_until

__all__: list[str] = []


def _msg(n: int) -> PendingMessage:
    return PendingMessage(sender_id="u1", sender_name="Ann", text=f"msg-{n:03d}", message_id=str(n))


def _texts(items: list[PendingMessage]) -> list[str]:
    return [m.text for m in items]


async def test_sequential_pushes_keep_the_newest_ten_oldest_first(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = PendingQueue(redis, keys=keys)
    lengths = [await queue.push("t1", _msg(n)) for n in range(25)]
    assert lengths == [min(n + 1, PENDING_CAP) for n in range(25)]
    assert await queue.length("t1") == PENDING_CAP
    assert _texts(await queue.drain("t1")) == [f"msg-{n:03d}" for n in range(15, 25)]


async def test_fifty_concurrent_pushes_keep_exactly_the_ten_that_arrived_last(
    redis: aioredis.Redis, redis_url: str, keys: Keys
) -> None:
    # Concurrent pushes over a pool have no client-side order, so ask the server: MONITOR lists
    # the RPUSH each push script runs, in the order the server executed them.
    queue = PendingQueue(redis, keys=keys)
    await queue.push("warmup", _msg(999))  # load the script so no push is retried after NOSCRIPT
    key = keys.pending("t1")
    executed: list[int] = []
    monitor_client = aioredis.Redis.from_url(redis_url)
    try:
        async with monitor_client.monitor() as monitor:

            async def record() -> None:
                while True:
                    command = (await monitor.next_command())["command"]
                    if command.startswith(f"RPUSH {key} "):
                        executed.append(int(re.findall(r"msg-(\d{3})", command)[0]))

            recorder = asyncio.create_task(record())
            await warm_pool(redis, 50)
            try:
                lengths = await asyncio.gather(*(queue.push("t1", _msg(n)) for n in range(50)))
                await wait_until(lambda: len(executed) == 50, timeout=5.0)
            finally:
                recorder.cancel()
    finally:
        await monitor_client.aclose()

    assert max(lengths) == PENDING_CAP
    assert sorted(executed) == list(range(50))
    kept = await queue.drain("t1")
    assert [int(m.message_id) for m in kept] == executed[-PENDING_CAP:]


async def test_drain_returns_oldest_first_and_empties_the_queue(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = PendingQueue(redis, keys=keys)
    sent = [
        PendingMessage(sender_id="u1", sender_name="Ann", text="first", message_id="1", at=10.0),
        PendingMessage(sender_id="u2", sender_name="Bo", text="second **md**", message_id="2"),
        PendingMessage(sender_id="u1", sender_name="Ann", text="третий ✓", message_id="3"),
    ]
    for message in sent:
        await queue.push("t1", message)
    assert await queue.drain("t1") == sent
    assert await redis.exists(keys.pending("t1")) == 0
    assert await queue.drain("t1") == []
    assert await queue.length("t1") == 0


async def test_concurrent_drains_never_return_the_same_item_twice(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = PendingQueue(redis, keys=keys, cap=1000)
    drained: list[str] = []
    await warm_pool(redis, 68)

    async def drainer() -> None:
        for _ in range(10):
            drained.extend(_texts(await queue.drain("t1")))
            await asyncio.sleep(0)

    await asyncio.gather(
        *(queue.push("t1", _msg(n)) for n in range(60)), *(drainer() for _ in range(8))
    )
    drained.extend(_texts(await queue.drain("t1")))
    counts = Counter(drained)
    assert counts == Counter(f"msg-{n:03d}" for n in range(60))


async def test_push_sets_and_refreshes_a_one_hour_ttl(redis: aioredis.Redis, keys: Keys) -> None:
    queue = PendingQueue(redis, keys=keys)
    await queue.push("t1", _msg(1))
    assert 3590 <= await redis.ttl(keys.pending("t1")) <= 3600
    await redis.expire(keys.pending("t1"), 5)
    await queue.push("t1", _msg(2))
    assert 3590 <= await redis.ttl(keys.pending("t1")) <= 3600


async def test_a_corrupt_entry_is_skipped_and_logged_and_the_rest_drained(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = PendingQueue(redis, keys=keys)
    await queue.push("t1", _msg(1))
    garbage = [b"\xff\xfe not json", b'{"text": "no sender"}', b"[1, 2]", b'"a string"', b"null"]
    await redis.rpush(keys.pending("t1"), *garbage)
    await queue.push("t1", _msg(2))

    with capture_logs() as logs:
        drained = await queue.drain("t1")

    assert _texts(drained) == ["msg-001", "msg-002"]
    skipped = [e for e in logs if e["event"] == "pending.corrupt_skipped"]
    assert len(skipped) == len(garbage)
    assert all(e["thread_id"] == "t1" and e["log_level"] == "warning" for e in skipped)
    assert await queue.length("t1") == 0


async def test_queues_of_different_threads_are_independent(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = PendingQueue(redis, keys=keys)
    await queue.push("t1", _msg(1))
    await queue.push("t2", _msg(2))
    assert _texts(await queue.drain("t1")) == ["msg-001"]
    assert _texts(await queue.drain("t2")) == ["msg-002"]
