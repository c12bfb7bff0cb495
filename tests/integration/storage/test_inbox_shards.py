"""The sharded inbox against a real server (a cluster in CI's cluster pass): a chat's messages
stay in one shard in order, every shard is read, finished, reclaimed and counted, the cap holds
over all shards, and a changed shard count drains the streams of the old one."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from storage import Inbox, InboxFull, Keys
from storage.inbox import GROUP
from storage.metrics import INBOX_LAG, INBOX_PENDING
from storage.shards import Layout
from tests.support import wait_until

__all__: list[str] = []

IDLE_S = 0.2
SHARDS = 4


def _inbox(redis: aioredis.Redis, keys: Keys, consumer: str, shards: int = SHARDS) -> Inbox:
    return Inbox(redis, keys=keys, consumer=consumer, claim_idle_s=IDLE_S, shards=shards)


def _chats_covering(layout: Layout) -> dict[str, str]:
    """One chat per shard tag."""
    chats: dict[str, str] = {}
    n = 0
    while len(chats) < layout.count:
        chats.setdefault(layout.tag_for(f"tg:{n}"), f"tg:{n}")
        n += 1
    return chats


async def _read_all(inbox: Inbox) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for shard in range(inbox.shards):
        out[shard] = [e.payload.decode() for e in await inbox.read(100, 0.01, shard)]
    return out


async def test_a_chats_messages_stay_in_one_shard_in_arrival_order(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    chats = [f"slack:C{n}" for n in range(12)]
    for i in range(5):
        for chat in chats:
            await inbox.append(f"{chat}|{i}".encode(), route=chat)

    read = await _read_all(inbox)
    shard_of: dict[str, int] = {}
    for shard, payloads in read.items():
        for payload in payloads:
            chat = payload.split("|")[0]
            assert shard_of.setdefault(chat, shard) == shard  # never in two shards
        for chat in {p.split("|")[0] for p in payloads}:
            order = [int(p.split("|")[1]) for p in payloads if p.startswith(f"{chat}|")]
            assert order == [0, 1, 2, 3, 4]
    assert sorted(shard_of) == sorted(chats)
    assert len(set(shard_of.values())) > 1  # twelve chats do not all hash to one shard


async def test_every_shard_is_read_and_finished_by_its_entry_ids(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    chats = _chats_covering(inbox.layout)
    ids = {tag: await inbox.append(tag.encode(), route=chat) for tag, chat in chats.items()}
    assert all(entry_id.endswith(f"@{tag}") for tag, entry_id in ids.items())
    assert len(set(ids.values())) == SHARDS

    got = [e for shard in range(SHARDS) for e in await inbox.read(10, 0.01, shard)]
    assert sorted(e.entry_id for e in got) == sorted(ids.values())
    for e in got:
        assert e.entry_id == ids[e.payload.decode()]
    assert (await inbox.summary()).in_hand == SHARDS

    await inbox.finish([e.entry_id for e in got])
    assert await inbox.backlog() == 0
    for tag in chats:
        assert await redis.xlen(keys.inbox(tag)) == 0
        assert (await redis.xpending(keys.inbox(tag), GROUP))["pending"] == 0


async def test_a_blocked_shard_read_wakes_for_an_entry_of_its_shard(
    redis: aioredis.Redis, keys: Keys
) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    tag, chat = next(iter(_chats_covering(inbox.layout).items()))
    shard = inbox.layout.tags.index(tag)
    reader = asyncio.create_task(inbox.read(1, 5.0, shard))
    await asyncio.sleep(0.1)
    entry_id = await inbox.append(b"late", route=chat)
    got = await asyncio.wait_for(reader, timeout=5.0)
    assert [e.entry_id for e in got] == [entry_id]


async def test_backlog_and_summary_count_every_shard(redis: aioredis.Redis, keys: Keys) -> None:
    inbox = _inbox(redis, keys, "a")
    await inbox.ensure_group()
    chats = list(_chats_covering(inbox.layout).values())
    for chat in chats:
        await inbox.append(b"x", route=chat)
        await inbox.append(b"y", route=chat)
    await inbox.read(1, 0.01, 0)  # one entry in hand, the rest unread

    assert await inbox.backlog() == 2 * SHARDS
    summary = await inbox.summary()
    assert (summary.unfinished, summary.in_hand, summary.unread) == (2 * SHARDS, 1, 2 * SHARDS - 1)
    assert summary.oldest_at is not None
    await inbox.observe()
    assert (INBOX_PENDING._value.get(), INBOX_LAG._value.get()) == (1, 2 * SHARDS - 1)


async def test_touch_keeps_entries_of_every_shard_from_being_reclaimed(
    redis: aioredis.Redis, keys: Keys
) -> None:
    a, b = _inbox(redis, keys, "a"), _inbox(redis, keys, "b")
    await a.ensure_group()
    for chat in _chats_covering(a.layout).values():
        await a.append(b"long turn", route=chat)
    held = [e.entry_id for shard in range(SHARDS) for e in await a.read(10, 0.01, shard)]
    for _ in range(3):
        await asyncio.sleep(IDLE_S * 0.6)
        await a.touch(held)
    taken, _ = await b.reclaim(10)
    assert taken == []


async def test_entries_of_a_stopped_consumer_are_reclaimed_from_every_shard(
    redis: aioredis.Redis, keys: Keys
) -> None:
    a, b = _inbox(redis, keys, "a"), _inbox(redis, keys, "b")
    await a.ensure_group()
    for chat in _chats_covering(a.layout).values():
        await a.append(chat.encode(), route=chat)
    dropped = {e.entry_id for shard in range(SHARDS) for e in await a.read(10, 0.01, shard)}
    assert len(dropped) == SHARDS

    taken: dict[str, int] = {}

    async def took_all() -> bool:
        entries, _gone = await b.reclaim(SHARDS)
        taken.update({e.entry_id: e.deliveries for e in entries})
        return set(taken) == dropped

    await wait_until(took_all, timeout=10)
    assert set(taken.values()) == {2}
    await b.finish(list(taken))
    assert await b.backlog() == 0


async def test_the_unfinished_cap_holds_over_all_shards(redis: aioredis.Redis, keys: Keys) -> None:
    inbox = Inbox(redis, keys=keys, shards=SHARDS, max_len=8)
    await inbox.ensure_group()
    chat = "tg:hot"
    for n in range(8 // SHARDS):
        await inbox.append(str(n).encode(), route=chat)
    try:
        await inbox.append(b"over this shard's share", route=chat)
    except InboxFull:
        pass
    else:
        raise AssertionError("a shard took more than its share of the cap")
    for other in _chats_covering(inbox.layout).values():
        if inbox.layout.tag_for(other) != inbox.layout.tag_for(chat):
            await inbox.append(b"another shard has room", route=other)


async def test_a_larger_shard_count_drains_the_single_stream(
    redis: aioredis.Redis, keys: Keys
) -> None:
    old = _inbox(redis, keys, "old", shards=1)
    await old.ensure_group()
    left = [await old.append(f"old {n}".encode(), route=f"tg:{n}") for n in range(5)]
    assert all("@" not in entry_id for entry_id in left)  # one shard: today's ids and key
    assert await redis.xlen(keys.inbox()) == 5

    new = _inbox(redis, keys, "new", shards=SHARDS)
    await new.ensure_group()
    assert await new.backlog() == 5  # the old stream counts until it is drained
    drained: list[str] = []

    async def drained_all() -> bool:
        entries, _gone = await new.reclaim(32)
        drained.extend(e.entry_id for e in entries)
        return len(drained) >= 5

    await wait_until(drained_all, timeout=10)
    assert sorted(drained) == sorted(left)
    await new.finish(drained)
    assert await new.backlog() == 0
    assert await redis.xlen(keys.inbox()) == 0


async def test_a_smaller_shard_count_drains_the_old_shards(
    redis: aioredis.Redis, keys: Keys
) -> None:
    old = _inbox(redis, keys, "old", shards=SHARDS)
    await old.ensure_group()
    left = {
        await old.append(chat.encode(), route=chat) for chat in _chats_covering(old.layout).values()
    }
    in_hand = (await old.read(10, 0.01, 0))[0].entry_id  # the old worker stops holding one

    new = _inbox(redis, keys, "new", shards=2)
    await new.ensure_group()
    drained: set[str] = set()

    async def drained_all() -> bool:
        entries, _gone = await new.reclaim(32)
        drained.update(e.entry_id for e in entries)
        return drained == left

    await wait_until(drained_all, timeout=10)
    assert in_hand in drained  # reclaimed from the old layout once its consumer went quiet
    await new.finish(sorted(drained))
    assert await new.backlog() == 0


async def test_on_a_cluster_intake_lands_on_every_master(
    redis: aioredis.Redis, keys: Keys, redis_cluster: bool
) -> None:
    if not redis_cluster:
        pytest.skip("needs a Redis Cluster (CI's cluster pass)")
    inbox = _inbox(redis, keys, "a", shards=16)
    await inbox.ensure_group()
    for n in range(200):
        await inbox.append(b"x", route=f"tg:{n}")
    per_master: dict[str, int] = {}
    for tag in inbox.layout.tags:
        key = keys.inbox(tag)
        node = redis.get_node_from_key(key)  # type: ignore[attr-defined]
        per_master[node.name] = per_master.get(node.name, 0) + int(await redis.xlen(key))
    masters = {n.name for n in redis.get_primaries()}  # type: ignore[attr-defined]
    assert set(per_master) == masters
    assert all(count > 0 for count in per_master.values())
    assert sum(per_master.values()) == 200


async def test_one_reclaim_takes_a_busy_shards_entries_beyond_its_share(
    redis: aioredis.Redis, keys: Keys
) -> None:
    a, b = _inbox(redis, keys, "a"), _inbox(redis, keys, "b")
    await a.ensure_group()
    chat = "tg:busy"
    shard = a.layout.tags.index(a.layout.tag_for(chat))
    for n in range(10):
        await a.append(str(n).encode(), route=chat)
    assert len(await a.read(100, 0.01, shard)) == 10  # then the consumer stops

    async def idle_long_enough() -> bool:
        rows = await redis.xpending_range(
            keys.inbox(a.layout.tags[shard]), GROUP, min="-", max="+", count=1
        )
        return bool(rows) and rows[0]["time_since_delivered"] >= IDLE_S * 1000

    await wait_until(idle_long_enough, timeout=10)
    taken, _gone = await b.reclaim(10)  # a share of 10 over 4 shards is 2; this shard has 10
    assert sorted(int(e.payload) for e in taken) == list(range(10))
