"""Script calls made together share a round trip, and each caller still gets its own reply."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.exceptions import ResponseError

from storage import connect
from storage.autopipeline import AutoPipelineRedis
from storage.scripts import ScriptCall, run_scripts

__all__: list[str] = []

_ECHO = "redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]"
_FAIL_ON_BAD = "if ARGV[1] == 'bad' then return redis.error_reply('refused') end return ARGV[1]"


@pytest.fixture
async def client(redis_url: str, redis_cluster: bool) -> AsyncIterator[AutoPipelineRedis]:
    if redis_cluster:
        pytest.skip("a cluster client sends one request per script call (no script pipelines)")
    made = connect(redis_url)
    assert isinstance(made, AutoPipelineRedis)
    try:
        yield made
    finally:
        await made.aclose()


def _count_checkouts(client: AutoPipelineRedis) -> list[int]:
    """Round trips, counted as connection checkouts (each request takes one from the pool)."""
    count = [0]
    pool: Any = client.connection_pool
    original = pool.get_connection

    async def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return await original(*args, **kwargs)

    pool.get_connection = counted
    return count


async def test_script_calls_made_together_go_in_one_round_trip_each_with_its_reply(
    client: AutoPipelineRedis, prefix: str
) -> None:
    echo = client.register_script(_ECHO)
    await echo(keys=[f"{prefix}warm"], args=["x"])  # loaded once, outside the count
    checkouts = _count_checkouts(client)
    replies = await asyncio.gather(
        *(echo(keys=[f"{prefix}k{i}"], args=[f"v{i}"]) for i in range(50))
    )
    assert replies == [f"v{i}".encode() for i in range(50)]
    assert checkouts[0] == 1
    assert await client.get(f"{prefix}k49") == b"v49"


async def test_one_callers_script_error_reaches_only_that_caller(
    client: AutoPipelineRedis,
) -> None:
    script = client.register_script(_FAIL_ON_BAD)
    results = await asyncio.gather(
        script(keys=[], args=["a"]),
        script(keys=[], args=["bad"]),
        script(keys=[], args=["c"]),
        return_exceptions=True,
    )
    assert results[0] == b"a" and results[2] == b"c"
    assert isinstance(results[1], ResponseError) and "refused" in str(results[1])


async def test_scripts_flushed_from_the_server_are_loaded_again_for_every_caller(
    client: AutoPipelineRedis, prefix: str
) -> None:
    echo = client.register_script(_ECHO)
    await echo(keys=[f"{prefix}warm"], args=["x"])
    await client.script_flush()
    replies = await asyncio.gather(*(echo(keys=[f"{prefix}k{i}"], args=[i]) for i in range(5)))
    assert replies == [str(i).encode() for i in range(5)]


async def test_a_blocking_read_does_not_hold_up_the_script_calls_beside_it(
    client: AutoPipelineRedis, prefix: str
) -> None:
    echo = client.register_script(_ECHO)
    blocked = asyncio.create_task(client.blpop([f"{prefix}empty"], 2))
    await asyncio.sleep(0.05)
    async with asyncio.timeout(1.0):  # long before the blocking read gives up
        assert await echo(keys=[f"{prefix}k"], args=["v"]) == b"v"
    assert not blocked.done()
    await client.rpush(f"{prefix}empty", "done")
    assert await blocked == (f"{prefix}empty".encode(), b"done")


async def test_a_caller_cancelled_before_the_round_trip_sends_nothing(
    client: AutoPipelineRedis, prefix: str
) -> None:
    echo = client.register_script(_ECHO)
    await echo(keys=[f"{prefix}warm"], args=["x"])
    cancelled = asyncio.ensure_future(echo(keys=[f"{prefix}gone"], args=["v"]))
    kept = asyncio.ensure_future(echo(keys=[f"{prefix}kept"], args=["v"]))
    await asyncio.sleep(0)  # both are queued now
    cancelled.cancel()
    assert await kept == b"v"
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert await client.exists(f"{prefix}gone") == 0


async def test_a_batch_of_independent_scripts_shares_the_round_trip_of_other_callers(
    client: AutoPipelineRedis, prefix: str
) -> None:
    echo = client.register_script(_ECHO)
    await echo(keys=[f"{prefix}warm"], args=["x"])
    checkouts = _count_checkouts(client)
    batch = [ScriptCall(echo, [f"{prefix}b{i}"], [f"b{i}"]) for i in range(3)]
    together, alone, value = await asyncio.gather(
        run_scripts(client, batch),
        echo(keys=[f"{prefix}alone"], args=["a"]),
        client.set(f"{prefix}plain", "p"),
    )
    assert together == [b"b0", b"b1", b"b2"] and alone == b"a" and value is True
    assert checkouts[0] == 1


async def test_a_batch_whose_scripts_were_flushed_loads_them_and_answers(
    client: AutoPipelineRedis, prefix: str
) -> None:
    echo = client.register_script(_ECHO)
    await client.script_flush()
    batch = [ScriptCall(echo, [f"{prefix}b{i}"], [f"b{i}"]) for i in range(3)]
    assert await run_scripts(client, batch) == [b"b0", b"b1", b"b2"]
