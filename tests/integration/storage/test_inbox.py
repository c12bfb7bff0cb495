"""The inbox against a real server: each entry goes to one consumer, is deleted once finished,
and comes back to another consumer when the one holding it stops."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis

from storage import Inbox, InboxFull, Keys
from storage.inbox import GROUP
from tests.support import wait_until

__all__: list[str] = []

IDLE_S = 0.2


def _inbox(redis: aioredis.Redis, keys: Keys, consumer: str, **kw: float) -> Inbox:
    return Inbox(redis, keys=keys, consumer=consumer, claim_idle_s=IDLE_S, **kw)  # type: ignore[arg-type]


async def _pending(redis: aioredis.Redis, keys: Keys) -> int:
    return int((await redis.xpending(keys.inbox(), GROUP))["pending"])


async def test_an_appended_entry_is_read_by_one_consumer_only(
    redis: aioredis.Redis, keys: Keys
) -> None:
    a, b = _inbox(redis, keys, "a"), _inbox(redis, keys, "b")
    await a.ensure_group()
    entry_id = await a.append(b'{"text":"hi"}')

    got = await a.read(count=10, block_s=0.05)
    assert [(e.entry_id, e.payload, e.deliveries) for e in got] == [(entry_id, b'{"text":"hi"}', 1)]
    assert await b.read(count=10, block_s=0.05) == []
    assert await a.read(count=10, block_s=0.05) == []  # nor twice to the same consumer
    assert await a.backlog() == 1


async def test_entries_appended_before_the_group_existed_are_read(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    first = await inbox.append(b"1")
    await inbox.ensure_group()
    await inbox.ensure_group()  # idempotent: does not move the group past unread entries
    second = await inbox.append(b"2")
    got = await inbox.read(count=10, block_s=0.05)
    assert [e.entry_id for e in got] == [first, second]


async def test_a_blocked_read_wakes_for_an_entry_appended_meanwhile(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    reader = asyncio.create_task(inbox.read(count=1, block_s=5.0))
    await asyncio.sleep(0.1)
    entry_id = await inbox.append(b"late")
    got = await asyncio.wait_for(reader, timeout=5.0)
    assert [e.entry_id for e in got] == [entry_id]


async def test_finish_acknowledges_and_deletes_the_entries(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    ids = [await inbox.append(f"m{i}".encode()) for i in range(3)]
    await inbox.read(count=10, block_s=0.05)
    assert await _pending(redis, keys) == 3

    await inbox.finish(ids[:2])
    assert await redis.xlen(keys.inbox()) == 1
    assert await _pending(redis, keys) == 1
    await inbox.finish(ids[2:])
    await inbox.finish([])  # nothing to do, no error
    assert await redis.xlen(keys.inbox()) == 0
    assert await inbox.backlog() == 0
    assert await _pending(redis, keys) == 0


async def test_a_stopped_consumers_entry_is_reclaimed_by_another_after_the_idle_time(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dead, live = _inbox(redis, keys, "dead"), _inbox(redis, keys, "live")
    await dead.ensure_group()
    entry_id = await dead.append(b"payload")
    assert len(await dead.read(count=10, block_s=0.05)) == 1

    assert await live.reclaim(count=10) == ([], [])  # not idle long enough yet

    async def reclaimed() -> list:  # type: ignore[type-arg]
        entries, _gone = await live.reclaim(count=10)
        return entries

    entries = await wait_until(reclaimed, timeout=5.0)
    assert [(e.entry_id, e.payload) for e in entries] == [(entry_id, b"payload")]
    assert entries[0].deliveries >= 2
    rows = await redis.xpending_range(keys.inbox(), GROUP, min="-", max="+", count=10)
    assert [(r["message_id"].decode(), r["consumer"].decode()) for r in rows] == [
        (entry_id, "live")
    ]
    assert await live.reclaim(count=10) == ([], [])  # just claimed: idle again from zero


async def test_touch_keeps_a_live_consumers_entry_from_being_reclaimed(
    redis: aioredis.Redis, keys: Keys
) -> None:
    busy, other = _inbox(redis, keys, "busy"), _inbox(redis, keys, "other")
    await busy.ensure_group()
    entry_id = await busy.append(b"long turn")
    await busy.read(count=10, block_s=0.05)

    for _ in range(5):  # a turn three times longer than the idle time, touched every half of it
        await asyncio.sleep(IDLE_S / 2)
        await busy.touch([entry_id])
        assert await other.reclaim(count=10) == ([], [])
    await busy.touch([])  # nothing to do, no error

    async def reclaimed() -> list:  # type: ignore[type-arg]
        entries, _gone = await other.reclaim(count=10)
        return entries

    assert [e.entry_id for e in await wait_until(reclaimed, timeout=5.0)] == [entry_id]


async def test_append_past_max_len_raises_inbox_full_and_appends_nothing(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a", max_len=3)
    await inbox.ensure_group()
    ids = [await inbox.append(f"m{i}".encode()) for i in range(3)]
    with pytest.raises(InboxFull):
        await inbox.append(b"one too many")
    assert await redis.xlen(keys.inbox()) == 3
    entries = await inbox.read(count=10, block_s=0.05)
    assert [e.entry_id for e in entries] == ids

    await inbox.finish(ids[:1])  # finishing makes room again
    assert await inbox.append(b"fits now")
    assert await redis.xlen(keys.inbox()) == 3


async def test_read_recreates_the_group_after_the_stream_was_deleted(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    await redis.delete(keys.inbox())  # FLUSHALL, a restore of an old dump

    assert await inbox.read(count=10, block_s=0.05) == []
    groups = await redis.xinfo_groups(keys.inbox())
    assert [g["name"].decode() for g in groups] == [GROUP]
    entry_id = await inbox.append(b"after")
    assert [e.entry_id for e in await inbox.read(count=10, block_s=0.05)] == [entry_id]


async def test_reclaim_recreates_the_group_after_the_stream_was_deleted(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    await redis.delete(keys.inbox())
    assert await inbox.reclaim(count=10) == ([], [])
    assert [g["name"].decode() for g in await redis.xinfo_groups(keys.inbox())] == [GROUP]


async def test_pending_entries_whose_data_was_deleted_come_back_as_gone(
    redis: aioredis.Redis, keys: Keys
) -> None:
    dead, live = _inbox(redis, keys, "dead"), _inbox(redis, keys, "live")
    await dead.ensure_group()
    lost = await dead.append(b"deleted while pending")
    kept = await dead.append(b"still here")
    await dead.read(count=10, block_s=0.05)
    await redis.xdel(keys.inbox(), lost)

    gone_ids: list[str] = []
    claimed_ids: list[str] = []

    async def both_seen() -> bool:
        entries, gone = await live.reclaim(count=10)
        claimed_ids.extend(e.entry_id for e in entries)
        gone_ids.extend(gone)
        return bool(gone_ids) and bool(claimed_ids)

    await wait_until(both_seen, timeout=5.0)
    assert gone_ids == [lost]
    assert claimed_ids == [kept]
    await live.finish(gone_ids)
    rows = await redis.xpending_range(keys.inbox(), GROUP, min="-", max="+", count=10)
    assert [r["message_id"].decode() for r in rows] == [kept]


async def test_touch_never_takes_back_an_entry_another_consumer_reclaimed(
    redis: aioredis.Redis, keys: Keys
) -> None:
    stalled, other = _inbox(redis, keys, "stalled"), _inbox(redis, keys, "other")
    await stalled.ensure_group()
    entry_id = await stalled.append(b"slow")
    await stalled.read(count=10, block_s=0.05)

    async def reclaimed() -> list:  # type: ignore[type-arg]
        entries, _gone = await other.reclaim(count=10)
        return entries

    await wait_until(reclaimed, timeout=5.0)  # the stalled consumer's entry passed to `other`
    await stalled.touch([entry_id])  # the stalled one wakes up and keeps "its" entries fresh
    rows = await redis.xpending_range(keys.inbox(), GROUP, min="-", max="+", count=10)
    assert [r["consumer"].decode() for r in rows] == ["other"]


async def test_touch_checks_and_claims_in_one_step_so_a_reclaim_cannot_slip_between(
    redis: aioredis.Redis, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    stalled, other = _inbox(redis, keys, "stalled"), _inbox(redis, keys, "other")
    await stalled.ensure_group()
    entry_id = await stalled.append(b"slow")
    await stalled.read(count=10, block_s=0.05)

    async def reclaimed() -> list:  # type: ignore[type-arg]
        entries, _gone = await other.reclaim(count=10)
        return entries

    send = redis.execute_command
    replies: list[object] = []

    async def reclaim_after_the_first_reply(*args: object, **options: object) -> object:
        reply = await send(*args, **options)
        if not replies:  # touch's first round trip is back: the other consumer acts now
            replies.append(reply)
            await wait_until(reclaimed, timeout=5.0)
        return reply

    monkeypatch.setattr(redis, "execute_command", reclaim_after_the_first_reply)
    await stalled.touch([entry_id])
    monkeypatch.undo()

    assert replies
    rows = await redis.xpending_range(keys.inbox(), GROUP, min="-", max="+", count=10)
    assert [r["consumer"].decode() for r in rows] == ["other"]


async def test_summary_tells_what_waits_and_since_when(redis: aioredis.Redis, keys: Keys) -> None:
    inbox = Inbox(redis, keys=keys)
    empty = await inbox.summary()
    assert (empty.unfinished, empty.in_hand, empty.unread, empty.oldest_at) == (0, 0, 0, None)
    await inbox.ensure_group()
    before = time.time()
    for n in range(3):
        await inbox.append(f"m{n}".encode())
    await inbox.read(1, block_s=0.1)
    found = await inbox.summary()
    assert (found.unfinished, found.in_hand, found.unread) == (3, 1, 2)
    assert found.oldest_at is not None and before - 1 <= found.oldest_at <= time.time() + 1
