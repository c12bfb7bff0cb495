"""Several Lua scripts in one round trip: a pipeline of `EVALSHA`s.

redis-py's own pipeline support for `Script` objects first asks `SCRIPT EXISTS` on every
execute, a round trip of its own; here each script's text is sent only for a call the server
answered `NOSCRIPT` (after a restart or `SCRIPT FLUSH`), in a second round trip. redis-py
refuses scripts in a cluster pipeline (their slots may lie on different nodes), so on a cluster
the calls go out at once, each to its node: one round trip of wall time, one request per call.
Use it only for calls that are independent of each other (none reads what another writes). On
the auto-pipelining client (`storage.autopipeline`) the calls join the loop turn's pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis.asyncio as redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError, RedisError

from storage.autopipeline import AutoPipelineRedis

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript
    from redis.typing import EncodableT

__all__ = ["ScriptCall", "run_scripts"]


@dataclass(frozen=True, slots=True)
class ScriptCall:
    script: AsyncScript
    keys: list[str]
    args: list[EncodableT]


async def run_scripts(client: redis.Redis, calls: Sequence[ScriptCall]) -> list[Any]:
    """Each call's reply, in order; the first Redis error among them is raised."""
    if isinstance(client, RedisCluster):
        return list(await asyncio.gather(*(c.script(keys=c.keys, args=c.args) for c in calls)))
    replies: list[Any]
    if isinstance(client, AutoPipelineRedis):  # with everyone else's calls of this loop turn
        queued = [
            client.queue(("EVALSHA", c.script.sha, len(c.keys), *c.keys, *c.args)) for c in calls
        ]
        replies = list(await asyncio.gather(*queued, return_exceptions=True))
    else:
        async with client.pipeline(transaction=False) as pipe:
            for call in calls:
                pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
            replies = await pipe.execute(raise_on_error=False)
    for reply in replies:
        if isinstance(reply, BaseException) and not isinstance(reply, RedisError):
            raise reply  # cancelled, or not an error of Redis: raised as it is
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if missing:
        async with client.pipeline(transaction=False) as pipe:
            for i in missing:
                call = calls[i]
                pipe.eval(_text(call.script.script), len(call.keys), *call.keys, *call.args)
            for i, reply in zip(missing, await pipe.execute(raise_on_error=False), strict=True):
                replies[i] = reply
    for reply in replies:
        if isinstance(reply, RedisError):
            raise reply
    return replies


def _text(script: bytes | str | memoryview) -> str:
    return script if isinstance(script, str) else bytes(script).decode()
