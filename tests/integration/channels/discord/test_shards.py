"""Discord shards split across processes through one Redis lease each: two adapters with their
lease owners (standing in for two processes, on real Redis) against the fake Discord, whose
gateway routes a guild's events only to the session of its shard."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import redis.asyncio as aioredis

from channels.discord import DiscordAdapter
from channels.message import InboundMessage
from channels.ownership import ConnectionOwner, FairShare, exclusive_parts
from storage import Keys, Leases
from tests.fakes.discord_server import FakeDiscord
from tests.support import wait_until

TTL_S = 0.9  # lease TTL: renewals and heartbeats every 0.3 s


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = FakeDiscord(shard_count=2)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@dataclass
class Process:
    """One process's Discord side: a send-only adapter, a fair share, one owner per shard."""

    adapter: DiscordAdapter
    share: FairShare
    owners: list[ConnectionOwner]
    inbox: list[InboundMessage] = field(default_factory=list)

    def held(self) -> list[int]:
        return [i for i, o in enumerate(self.owners) if o.owner]

    async def stop(self) -> None:
        for owner in self.owners:
            await owner.stop()
        await self.share.stop()
        await self.adapter.stop()

    async def crash(self) -> None:
        """Die without letting go: loops end, gateways close, leases and heartbeat stay."""
        pending = {t for t in (self.share._task, *(o._task for o in self.owners)) if t}
        while pending:  # again until they end: Python 3.11 can drop a cancellation (gh-86296)
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.1)
        await self.adapter.stop()


async def start_process(fake: FakeDiscord, leases: Leases) -> Process:
    inbox: list[InboundMessage] = []

    async def deliver(msg: InboundMessage) -> None:
        inbox.append(msg)

    adapter = DiscordAdapter(
        token=fake.token,
        deliver=deliver,
        api_base=fake.api_base,
        gateway_url=fake.gateway_url,
        guild_ready_timeout=0.05,
        shards=2,
    )
    await adapter.start(receive=False)
    share = FairShare(leases, adapter.connection_name, 2)
    await share.start()
    owners = [ConnectionOwner(part, leases, share=share) for part in exclusive_parts(adapter)]
    for owner in owners:
        await owner.start()
    return Process(adapter, share, owners, inbox)


@pytest.fixture
def leases(redis: aioredis.Redis, keys: Keys) -> Leases:
    return Leases(redis, keys=keys, ttl_s=TTL_S)


def at_bot(fake: FakeDiscord, text: str) -> str:
    return f"<@{fake.bot['id']}> {text}"


async def split(fake: FakeDiscord, a: Process, b: Process) -> None:
    """Wait until each process holds one shard and the gateway has one session per shard."""

    def settled() -> bool:
        return sorted([*a.held(), *b.held()]) == [0, 1] and a.held() and b.held()

    await wait_until(settled, timeout=10)
    await wait_until(lambda: fake.connected_shards() == [(0, 2), (1, 2)], timeout=10)


async def test_one_shard_keeps_one_lease_named_as_before(fake: FakeDiscord) -> None:
    async def deliver(msg: InboundMessage) -> None:
        return None

    one = DiscordAdapter(token=fake.token, deliver=deliver, api_base=fake.api_base)
    two = DiscordAdapter(token=fake.token, deliver=deliver, api_base=fake.api_base, shards=2)
    assert exclusive_parts(one) == [one]
    names = [p.connection_name for p in exclusive_parts(two)]
    assert names == [f"{one.connection_name}:shard:0/2", f"{one.connection_name}:shard:1/2"]
    assert fake.token not in "".join(names)


async def test_two_processes_split_the_shards_and_each_gets_only_its_guilds(
    fake: FakeDiscord, leases: Leases
) -> None:
    guild0, channel0 = fake.add_guild(shard=0)
    guild1, channel1 = fake.add_guild(shard=1)
    a = await start_process(fake, leases)
    assert a.held() == [0, 1]  # alone, a process runs every shard
    b = await start_process(fake, leases)
    try:
        await split(fake, a, b)  # a lets its surplus go, b takes it
        on0, on1 = (a, b) if a.held() == [0] else (b, a)
        await fake.user_message(at_bot(fake, "on shard zero"), channel_id=channel0)
        await fake.user_message(at_bot(fake, "on shard one"), channel_id=channel1)
        await fake.user_message("a dm", dm=True)  # DMs come on shard 0
        await wait_until(lambda: len(on0.inbox) == 2 and len(on1.inbox) == 1)
        await asyncio.sleep(0.3)  # time for a duplicate to show up
        assert sorted((m.workspace_id, m.text) for m in on0.inbox) == [
            ("", "a dm"),
            (guild0, "on shard zero"),
        ]
        assert [(m.workspace_id, m.text) for m in on1.inbox] == [(guild1, "on shard one")]
        assert a.adapter.healthy and b.adapter.healthy
    finally:
        await b.stop()
        await a.stop()


async def test_a_dead_processs_shard_is_taken_over_and_its_events_arrive(
    fake: FakeDiscord, leases: Leases
) -> None:
    _, channel0 = fake.add_guild(shard=0)
    _, channel1 = fake.add_guild(shard=1)
    a = await start_process(fake, leases)
    b = await start_process(fake, leases)
    try:
        await split(fake, a, b)
        dead, survivor = (a, b) if a.held() == [1] else (b, a)
        await dead.crash()
        await wait_until(lambda: fake.connected_shards() == [(0, 2)], timeout=5)
        # Its lease and heartbeat expire after a TTL; the survivor's share grows to both.
        await wait_until(lambda: survivor.held() == [0, 1], timeout=TTL_S * 6)
        await wait_until(lambda: fake.connected_shards() == [(0, 2), (1, 2)], timeout=10)
        await fake.user_message(at_bot(fake, "after the crash"), channel_id=channel1)
        await fake.user_message(at_bot(fake, "still here"), channel_id=channel0)
        await wait_until(lambda: len(survivor.inbox) == 2)
        assert sorted(m.text for m in survivor.inbox) == ["after the crash", "still here"]
        assert not dead.inbox
    finally:
        await survivor.stop()
        await dead.stop()
