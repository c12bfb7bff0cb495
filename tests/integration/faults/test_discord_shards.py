"""Two real `switchboard serve` processes split two Discord shards through Redis leases; when one
is killed (-9) the other takes its shard over and answers that shard's guild."""

from __future__ import annotations

import types
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.discord_server import FakeDiscord
from tests.integration.faults.processes import Worker
from tests.support import wait_until

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    server = FakeDiscord(shard_count=2)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def discord_process(fake: FakeDiscord, redis_url: str, prefix: str, data: Path) -> Worker:
    """A `serve` process with Discord (two shards) as its only channel."""
    worker = Worker(types.SimpleNamespace(base_url=""), redis_url, prefix, data)  # type: ignore[arg-type]
    for name in [k for k in worker.env if k.startswith("TELEGRAM_")]:
        del worker.env[name]
    worker.env |= {
        "DISCORD_BOT_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "SWITCHBOARD_DISCORD_SHARDS": "2",
    }
    return worker


async def shard_leases(worker: Worker) -> list[str]:
    """The shards a process holds, `i/n`, as `/readyz` names them (none while it is not ready)."""
    async with worker.http() as http:
        leases = (await http.get("/readyz")).json().get("leases", [])
    return [name.rsplit(":", 1)[-1] for name in leases if ":shard:" in name]


async def test_two_processes_split_the_shards_and_a_survivor_takes_over_a_killed_ones(
    discord: FakeDiscord, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    _, channel0 = discord.add_guild(shard=0)
    _, channel1 = discord.add_guild(shard=1)
    first = discord_process(discord, redis_url, prefix, tmp_path / "a")
    second = discord_process(discord, redis_url, prefix, tmp_path / "b")
    try:
        await first.start()
        await second.start()

        async def split() -> tuple[list[str], list[str]] | None:
            held = (await shard_leases(first), await shard_leases(second))
            return held if sorted(held[0] + held[1]) == ["0/2", "1/2"] and all(held) else None

        held = await wait_until(split, timeout=60, interval=0.2)
        await wait_until(lambda: discord.connected_shards() == [(0, 2), (1, 2)], timeout=30)
        victim, survivor = (first, second) if held[0] == ["1/2"] else (second, first)
        await victim.kill()
        await wait_until(lambda: discord.connected_shards() == [(0, 2)], timeout=10)
        await wait_until(
            lambda: _holds(survivor, ["0/2", "1/2"]), timeout=60, interval=0.2
        )  # once the killed one's lease and heartbeat have expired (TTL 2 s)
        at_bot = f"<@{discord.bot['id']}>"
        moved = await discord.user_message(f"{at_bot} echo moved", channel_id=channel1)
        stayed = await discord.user_message(f"{at_bot} echo stayed", channel_id=channel0)
        await wait_until(
            lambda: discord.bot_messages(moved["id"]) and discord.bot_messages(stayed["id"]),
            timeout=60,
        )
    finally:
        await first.stop()
        await second.stop()
    assert [m["content"] for m in discord.bot_messages(moved["id"])] == ["moved"]
    assert [m["content"] for m in discord.bot_messages(stayed["id"])] == ["stayed"]


async def _holds(worker: Worker, shards: list[str]) -> bool:
    return sorted(await shard_leases(worker)) == shards
