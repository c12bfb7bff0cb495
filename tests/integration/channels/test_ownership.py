"""Lease owners on real Redis with stand-in receivers: a slow-opening connection keeps its lease,
and a group of leases is shared out fairly between the processes competing for it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine

import pytest
import redis.asyncio as aioredis

from channels.ownership import ConnectionOwner, FairShare
from storage import Keys, Leases
from tests.support import wait_until

TTL_S = 0.6


class Receiver:
    def __init__(self, name: str, open_s: float = 0.0) -> None:
        self.connection_name = name
        self.open_s = open_s
        self.open = False
        self.opened_at: float | None = None
        self.closed_at: float | None = None

    async def start_receiving(self) -> None:
        await asyncio.sleep(self.open_s)
        self.open = True
        self.opened_at = time.monotonic()

    async def stop_receiving(self) -> None:
        self.open = False
        self.closed_at = time.monotonic()


@pytest.fixture
def leases(redis: aioredis.Redis, keys: Keys) -> Leases:
    return Leases(redis, keys=keys, ttl_s=TTL_S)


async def test_a_connection_slower_to_open_than_the_ttl_keeps_its_lease(leases: Leases) -> None:
    receiver = Receiver("slow", open_s=TTL_S * 2.5)
    owner = ConnectionOwner(receiver, leases)  # type: ignore[arg-type]
    await owner.start()
    try:
        assert owner.owner and receiver.open
        await asyncio.sleep(TTL_S * 1.5)
        assert owner.owner and receiver.open
        assert await leases.holder("slow") is not None
    finally:
        await owner.stop()


async def test_a_newcomer_gets_the_surplus_and_a_leaver_hands_its_share_back(
    leases: Leases,
) -> None:
    async def process() -> tuple[FairShare, list[ConnectionOwner], list[Receiver]]:
        share = FairShare(leases, "group", 3)
        await share.start()
        receivers = [Receiver(f"group:{i}") for i in range(3)]
        owners = [ConnectionOwner(r, leases, share=share) for r in receivers]  # type: ignore[arg-type]
        for owner in owners:
            await owner.start()
        return share, owners, receivers

    def held(owners: list[ConnectionOwner]) -> int:
        return sum(o.owner for o in owners)

    share_a, owners_a, receivers_a = await process()
    assert held(owners_a) == 3
    share_b, owners_b, receivers_b = await process()
    try:
        await wait_until(lambda: (held(owners_a), held(owners_b)) == (2, 1), timeout=TTL_S * 8)
        await wait_until(lambda: sum(r.open for r in receivers_a + receivers_b) == 3, timeout=5)
        for owner in owners_a:
            await owner.stop()
        await share_a.stop()
        await wait_until(lambda: held(owners_b) == 3, timeout=TTL_S * 8)
    finally:
        for owner in owners_a + owners_b:
            await owner.stop()
        await share_b.stop()


async def test_a_shed_connection_closes_only_after_the_new_holder_has_opened(
    leases: Leases,
) -> None:
    """No gap in receiving on a handover: Discord replays nothing to a new session, so the
    old one stays open (both receive, dedupe answers once) until the new one is up."""
    first_share, second_share = FairShare(leases, "g", 2), FairShare(leases, "g", 2)
    await first_share.start()
    old = [Receiver(f"g:{i}") for i in range(2)]
    old_owners = [ConnectionOwner(r, leases, share=first_share) for r in old]  # type: ignore[arg-type]
    for owner in old_owners:
        await owner.start()
    await second_share.start()
    new = [Receiver(f"g:{i}", open_s=TTL_S / 2) for i in range(2)]
    new_owners = [ConnectionOwner(r, leases, share=second_share) for r in new]  # type: ignore[arg-type]
    try:
        for owner in new_owners:
            await owner.start()
        await wait_until(lambda: any(r.closed_at for r in old), timeout=TTL_S * 10)
        (shed,) = [i for i, r in enumerate(old) if r.closed_at]
        opened = new[shed].opened_at
        assert opened is not None and opened < (old[shed].closed_at or 0.0)
        assert not any(r.open for r in old if r.closed_at) and new[shed].open
    finally:
        for owner in old_owners + new_owners:
            await owner.stop()
        await first_share.stop()
        await second_share.stop()


class DroppingLeases(Leases):
    """Real leases whose next beat or renewal swallows the cancellation that lands while it
    finishes, as `asyncio.wait_for` (around every redis-py send) does on Python 3.11 (CPython
    gh-86296)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.armed = False
        self.in_call = asyncio.Event()
        self.calls = 0

    async def _dropping(self) -> None:
        self.calls += 1
        if self.armed:
            self.armed = False
            self.in_call.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(5)

    async def beat(self, group: str, member: str) -> int:
        live = await super().beat(group, member)
        await self._dropping()
        return live

    async def renew(self, name: str, token: str) -> bool:
        held = await super().renew(name, token)
        await self._dropping()
        return held


async def ends_soon(stopping: Coroutine[object, object, None]) -> None:
    """Within a few beats, and not by the test's own cancellation (which `stop()` would
    take for the one it passes on)."""
    task = asyncio.create_task(stopping)
    done, _ = await asyncio.wait({task}, timeout=TTL_S * 3)
    assert task in done, "stop() still waits for a loop that lived on"
    await task


@pytest.fixture
def dropping(redis: aioredis.Redis, keys: Keys) -> DroppingLeases:
    return DroppingLeases(redis, keys=keys, ttl_s=TTL_S)


async def test_a_share_stops_and_leaves_its_group_when_a_beats_cancellation_is_dropped(
    dropping: DroppingLeases, keys: Keys, redis: aioredis.Redis
) -> None:
    share = FairShare(dropping, "group", 2)
    await share.start()
    dropping.armed = True
    await dropping.in_call.wait()
    await ends_soon(share.stop())  # its cancellation lands inside the beat and is dropped there
    calls = dropping.calls
    await asyncio.sleep(TTL_S)  # three beat intervals
    assert dropping.calls == calls
    assert await redis.zcard(keys.lease_members("group")) == 0


async def test_an_owner_stops_and_lets_go_when_a_renewals_cancellation_is_dropped(
    dropping: DroppingLeases,
) -> None:
    receiver = Receiver("one")
    owner = ConnectionOwner(receiver, dropping)  # type: ignore[arg-type]
    await owner.start()
    assert owner.owner
    dropping.armed = True
    await dropping.in_call.wait()
    await ends_soon(owner.stop())
    calls = dropping.calls
    await asyncio.sleep(TTL_S)
    assert dropping.calls == calls
    assert not receiver.open
    assert await dropping.holder("one") is None
