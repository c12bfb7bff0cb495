"""Redis calls made in the same turn of the event loop go to Redis in one pipeline.

Under a burst, hundreds of turns each make their own Lua script calls (admission, queue,
checkpoint, ledger, send budget, lock beats), one round trip each. A round trip costs the client
far more than the command: a pool checkout, a write and a read system call, and a wake-up of the
waiting task, about 40 us of CPU here. So `AutoPipelineRedis` (ioredis calls the same technique
auto-pipelining) queues every `EVALSHA`, `EVAL`, `SET` and `GET` made while the loop runs other
callbacks and sends the queue as one non-transactional pipeline; each caller still awaits its
own reply (and gets its own error), so nothing is written in the background and a caller
continues only once its command has run. The first call of a turn sends it itself after one
turn of the loop, alone if no other call joined: an idle service waits for no one.

Only those four commands: they never block (a blocking read, `XREADGROUP … BLOCK`, would hold
up every call behind it) and each of our calls is idempotent, so a pipeline resent after a
connection error changes nothing. `queue` takes several independent calls at once
(`storage.scripts.run_scripts`), so they share the round trip with everyone else's. A
pipeline's commands run in queue order, but calls queued together were made concurrently, so
no caller relied on an order among them. A `NOSCRIPT` reply reaches its caller as redis-py's
`NoScriptError`, on which its `Script` loads the script and calls again.

The single-node and Sentinel clients auto-pipeline; redis-py's cluster client refuses scripts in
a pipeline, so a cluster keeps one request per call (`connection.WaitingCluster`).
"""

from __future__ import annotations

import asyncio
from asyncio import Future
from typing import Any

import redis.asyncio as redis

__all__ = ["AutoPipelineRedis"]

_Call = tuple[tuple[Any, ...], dict[str, Any], Future[Any]]  # command, options, its reply

_QUEUED = frozenset({"EVALSHA", "EVAL", "SET", "GET"})  # as redis-py names them


class AutoPipelineRedis(redis.Redis):
    """A single-node client whose concurrent calls share round trips (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queued: list[_Call] = []
        self._leading = False  # a caller is gathering this loop turn's calls (see below)
        self._sending: set[asyncio.Task[None]] = set()

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        if args[0] not in _QUEUED or self.single_connection_client:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated; untyped_calls_exclude misses super() (mypy#16653)
        if self._queued or self._leading:
            return await self.queue(args, options)
        # The first call of a loop turn leads: it lets the loop run the callbacks that are ready
        # (their calls join), then sends alone or with them. No task, no extra loop turn.
        self._leading = True
        try:
            await asyncio.sleep(0)
        except BaseException:
            self._leading = False
            self._send_queued()  # whoever joined is still sent
            raise
        self._leading = False
        joined, self._queued = self._queued, []
        if not joined:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]  # as above
        own: Future[Any] = asyncio.get_running_loop().create_future()
        self._start([(args, options, own), *joined])
        return await own

    def queue(self, args: tuple[Any, ...], options: dict[str, Any] | None = None) -> Future[Any]:
        """Queue one command for the next round trip: its reply (or error) when it has run.
        For several independent calls made at once (`storage.scripts.run_scripts`); only
        commands that never block belong here."""
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Any] = loop.create_future()
        self._queued.append((args, options or {}, reply))
        if len(self._queued) == 1 and not self._leading:
            loop.call_soon(self._send_queued)
        return reply

    def _send_queued(self) -> None:
        if self._leading:  # a leader took over the queue: it sends it
            return
        queued, self._queued = self._queued, []
        self._start(queued)

    def _start(self, queued: list[_Call]) -> None:
        live = [q for q in queued if not q[2].done()]  # a cancelled caller's call is not sent
        if not live:
            return
        task = asyncio.ensure_future(self._send(live))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, queued: list[_Call]) -> None:
        try:
            if len(queued) == 1:
                args, options, _ = queued[0]
                replies: list[Any] = [await super().execute_command(*args, **options)]  # type: ignore[no-untyped-call]  # as above
            else:
                async with self.pipeline(transaction=False) as pipe:
                    for args, options, _ in queued:
                        pipe.execute_command(*args, **options)
                    replies = await pipe.execute(raise_on_error=False)
        except Exception as exc:  # the connection failed: every caller gets the error
            for _, _, reply in queued:
                if not reply.done():
                    reply.set_exception(exc)
            return
        except BaseException:
            for _, _, reply in queued:
                reply.cancel()
            raise
        for (_, _, reply), value in zip(queued, replies, strict=True):
            if reply.done():
                continue
            if isinstance(value, Exception):
                reply.set_exception(value)
            else:
                reply.set_result(value)

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
        await super().aclose(close_connection_pool)
