"""`switchboard store stats`: what the Redis store holds, by key family, for operators.

It opens the store as the admin commands do (`REDIS_URL`, or the embedded store a running
process publishes), walks the keys under `SWITCHBOARD_REDIS_PREFIX` with SCAN (every primary of a
cluster) and prints each family's key count, how many keys have no TTL, the memory estimated from
`MEMORY USAGE` of a sample, and what bounds a family without a TTL (`storage.key_families`). SCAN
is incremental, so it is safe on a live store; it costs about one round trip per 500 keys.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from service.settings import load_settings
from switchboard.errors import SwitchboardError

__all__ = ["add_store_commands", "format_stats"]


def add_store_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    store = subparsers.add_parser("store", help="inspect the Redis store")
    sub = store.add_subparsers(dest="store_command", metavar="COMMAND", required=True)
    stats = sub.add_parser("stats", help="key families with counts, TTLs and memory")
    stats.add_argument(
        "--sample", type=int, default=50, help="keys per family measured with MEMORY USAGE"
    )
    stats.set_defaults(func=_stats)


def _stats(args: argparse.Namespace) -> int:
    try:
        print(asyncio.run(_collect(max(1, args.sample))))
    except SwitchboardError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    return 0


async def _collect(sample: int) -> str:
    from service.cli_redis import cli_redis
    from storage.key_families import FAMILIES, store_stats

    settings = load_settings()
    async with cli_redis(settings) as client:
        stats = await store_stats(client, settings.redis_prefix, sample=sample)
        used = _used_memory(await client.info("memory"))
    bounds = {family.name: family.bound for family in FAMILIES}
    rows = [
        (s.name, s.keys, s.without_ttl, s.bytes, bounds.get(s.name, "") if s.without_ttl else "")
        for s in stats
    ]
    return format_stats(rows, used_memory=used, prefix=settings.redis_prefix)


def _used_memory(info: dict[str, Any]) -> int:
    """`used_memory` of the server, or summed over a cluster's nodes."""
    if "used_memory" in info:
        return int(info["used_memory"])
    return sum(int(node.get("used_memory", 0)) for node in info.values() if isinstance(node, dict))


def format_stats(
    rows: list[tuple[str, int, int, int, str]], *, used_memory: int, prefix: str
) -> str:
    """One line per family: name, keys, keys without a TTL, memory, and the bound of those."""
    header = ("family", "keys", "no TTL", "memory", "bound without a TTL")
    body = [
        (name, f"{keys:,}", f"{bare:,}", _size(size), bound)
        for name, keys, bare, size, bound in rows
    ]
    total_keys = sum(r[1] for r in rows)
    total = sum(r[3] for r in rows)
    body.append(("total", f"{total_keys:,}", f"{sum(r[2] for r in rows):,}", _size(total), ""))
    widths = [max(len(str(row[i])) for row in (header, *body)) for i in range(4)]
    lines = [
        "  ".join(
            [
                str(row[0]).ljust(widths[0]),
                *(str(row[i]).rjust(widths[i]) for i in (1, 2, 3)),
                row[4],
            ]
        ).rstrip()
        for row in (header, *body)
    ]
    lines.append(f"keys under {prefix!r}; the server's used_memory: {_size(used_memory)}")
    return "\n".join(lines)


def _size(value: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:,.1f} {unit}"
    return f"{value} B"
