"""Redis through Sentinel, against a real primary, replica and three Sentinels: the client finds
the primary, follows a failover (`kill -9` of the primary) to the promoted replica with its
scripts reloaded, and an append with MIN_REPLICAS_ACK fails when no replica confirms it."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from storage import Inbox, Keys, open_redis
from switchboard.errors import TransientStorageError
from tests.integration.sentinel_group import SentinelGroup, needs_sentinel
from tests.support import wait_until

__all__: list[str] = []

pytestmark = [needs_sentinel, pytest.mark.timeout(120)]


@pytest.fixture
async def group(tmp_path: Path):  # type: ignore[no-untyped-def]
    g = SentinelGroup(tmp_path / "sentinel")
    try:
        await g.start()
        yield g
    finally:
        await g.stop()


async def test_the_client_follows_a_failover_to_the_promoted_replica(
    group: SentinelGroup, tmp_path: Path
) -> None:
    keys = Keys("sb:")
    async with open_redis(group.url, tmp_path) as client:
        inbox = Inbox(client, keys=keys, consumer="w", min_replicas=1)
        await inbox.ensure_group()
        before = [await inbox.append(f"before {n}".encode()) for n in range(5)]

        group.kill_primary()
        await group.wait_failover()

        promoted = group.replica_port
        after: list[str] = []
        alone = Inbox(client, keys=keys, consumer="w")  # the promoted replica has no replica

        async def appended() -> bool:  # the first tries may meet the dead primary
            try:
                after.append(await alone.append(b"after"))
            except TransientStorageError:
                return False
            return True

        await wait_until(appended, timeout=30, interval=0.2)
        got = await inbox.read(100, 0.1)
        assert [e.entry_id for e in got] == [*before, *after]  # WAITed entries all survived
        info = await client.info("server")
        assert int(info["tcp_port"]) == promoted

        with pytest.raises(TransientStorageError, match="0 of 1 replicas"):
            await inbox.append(b"no replica left to confirm it")
        with capture_logs() as logs:  # a process starting now says why its appends fail
            await Inbox(client, keys=keys, min_replicas=1).ensure_group()
        assert {"event": "inbox.replicas_missing", "connected": 0, "required": 1}.items() <= next(
            e for e in logs if e["event"] == "inbox.replicas_missing"
        ).items()
        await group.restart_old_primary()  # back as the new primary's replica
        await wait_until(lambda: _appends(inbox), timeout=30, interval=0.2)


async def test_an_append_no_replica_confirms_in_time_is_a_failed_append(
    group: SentinelGroup, tmp_path: Path
) -> None:
    async with open_redis(group.url, tmp_path) as client:
        inbox = Inbox(client, keys=Keys("sb:"), min_replicas=1, replicas_timeout_ms=300)
        await inbox.ensure_group()
        await inbox.append(b"confirmed")
        group.pause_replica()
        try:
            with pytest.raises(TransientStorageError, match="0 of 1 replicas"):
                await inbox.append(b"not confirmed")
        finally:
            group.resume_replica()
        await wait_until(lambda: _appends(inbox), timeout=30, interval=0.2)


async def _appends(inbox: Inbox) -> bool:
    try:
        await inbox.append(b"confirmed again")
    except TransientStorageError:
        return False
    return True
