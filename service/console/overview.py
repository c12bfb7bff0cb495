"""The overview page's facts: connections, inbox, Redis memory and recent failures, read in a
handful of round trips when an admin opens the page (nothing here runs on a turn)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from service.console.conversations import platform_of
from service.console.sources import ConsoleSources
from storage import InboxSummary
from switchboard import __version__

__all__ = ["LeaseRow", "Overview", "read_overview"]


@dataclass(frozen=True, slots=True)
class LeaseRow:
    name: str
    holder: str  # "this process", "another process" or "nobody"


@dataclass(frozen=True, slots=True)
class Overview:
    role: str
    version: str
    platforms: list[tuple[str, str, float | None]]  # (platform, connection state, last message)
    leases: list[LeaseRow]
    inbox: InboxSummary
    inbox_wait_s: float | None  # how long the oldest unfinished message has waited
    busiest: list[tuple[str, str, int]]  # (conversation key, thread id, queued) of recent ones
    redis_used: str
    redis_max: str
    redis_policy: str
    failures_last_minute: int
    failures_per_minute_last_hour: float
    last_failure_at: float | None


def _memory(info: dict[str, Any]) -> tuple[str, str]:
    """`used_memory_human` and `maxmemory_human`; a cluster client answers per node."""
    if "used_memory" in info:
        nodes = [info]
    else:
        nodes = [v for v in info.values() if isinstance(v, dict) and "used_memory" in v]
    if not nodes:
        return "unknown", "unknown"
    used = sum(int(n.get("used_memory", 0)) for n in nodes)
    most = sum(int(n.get("maxmemory", 0)) for n in nodes)
    return _bytes(used), _bytes(most) if most else "no limit"


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


async def read_overview(src: ConsoleSources) -> Overview:
    now = time.time()
    recent = await src.threads.recent()
    last_seen: dict[str, float] = {}
    for c in recent:  # newest first: a platform's first is its last message
        last_seen.setdefault(platform_of(c.key), c.active_at)
    platforms = [
        (
            c.platform,
            "running" if c.healthy is None else ("connected" if c.healthy else "down"),
            last_seen.get(c.platform),
        )
        for c in src.connections()
    ]
    leases = []
    for lease in src.lease_states():
        if lease.held_here:
            holder = "this process"
        else:
            holder = "another process" if await src.leases.holder(lease.name) else "nobody"
        leases.append(LeaseRow(lease.name, holder))
    inbox = await src.inbox.summary()
    try:
        used, most = _memory(await src.redis.info("memory"))
    except RedisError:
        used, most = "unknown", "unknown"  # INFO may be renamed or denied on managed services
    states = await asyncio.gather(*(src.queue.state(c.thread_id) for c in recent))
    queued = sorted(
        ((c.key, c.thread_id, s.unanswered) for c, s in zip(recent, states, strict=True)),
        key=lambda row: row[2],
        reverse=True,
    )
    failures = await src.failures.recent()
    hour = [f for f in failures if f.at >= now - 3600]
    return Overview(
        role=src.settings.role,
        version=__version__,
        platforms=platforms,
        leases=leases,
        inbox=inbox,
        inbox_wait_s=max(0.0, now - inbox.oldest_at) if inbox.oldest_at else None,
        busiest=[row for row in queued if row[2] > 0][:5],
        redis_used=used,
        redis_max=most,
        redis_policy=src.redis_policy() or "unknown (CONFIG GET denied)",
        failures_last_minute=sum(1 for f in hour if f.at >= now - 60),
        failures_per_minute_last_hour=round(len(hour) / 60, 2),
        last_failure_at=failures[0].at if failures else None,
    )
