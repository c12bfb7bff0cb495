"""Which keys a script touched without naming them in KEYS, seen from the server (MONITOR).

Redis 7 functions and cluster nodes refuse a script that touches keys it did not declare; a single
node runs it anyway, so the storage suites would never notice. `watch_scripts` records every
command the server runs while a block of storage calls runs: EVAL/EVALSHA calls with their KEYS,
and the commands those scripts ran (MONITOR shows them as coming from `lua`), whose keys the
server itself names (`COMMAND GETKEYS`). Only keys under the test's prefix count, so commands of
other tests on a shared server do not.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

__all__ = ["ScriptKeys", "watch_scripts"]

_LINE = re.compile(rb"^[\d.]+ \[\d+ ([^\]]+)\] (.*)$")
_ARG = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b"}


def _unescape(raw: bytes) -> bytes:
    """Undo the server's quoting of one MONITOR argument (`sdscatrepr`)."""
    out = bytearray()
    i = 0
    while i < len(raw):
        ch = raw[i : i + 1]
        if ch != b"\\":
            out += ch
            i += 1
            continue
        nxt = raw[i + 1 : i + 2]
        if nxt == b"x":
            out.append(int(raw[i + 2 : i + 4], 16))
            i += 4
        else:
            out += _ESCAPES.get(nxt, nxt)
            i += 2
    return bytes(out)


@dataclass
class ScriptKeys:
    declared: set[str] = field(default_factory=set)  # KEYS of the scripts called
    touched: set[str] = field(default_factory=set)  # keys the scripts' commands used
    undeclared: set[str] = field(default_factory=set)  # touched by a script that did not name it


@asynccontextmanager
async def watch_scripts(client: aioredis.Redis, prefix: str) -> AsyncIterator[ScriptKeys]:
    """Record the scripts run inside the block; the result is filled when the block ends.

    A script runs alone on the server, so its own commands are the `lua` lines right next to its
    EVAL line: after it or before it, depending on the server's version. One probe script at the
    start tells which."""
    seen = ScriptKeys()
    monitor = client.connection_pool.make_connection()
    await monitor.connect()
    try:
        await monitor.send_command("MONITOR")
        assert await monitor.read_response() in (b"OK", "OK")
        await client.eval("return redis.call('EXISTS', KEYS[1])", 1, f"{prefix}watch-probe")
        yield seen
        marker = f"watch-scripts-end-{uuid.uuid4().hex}".encode()
        await client.echo(marker)
        lines: list[tuple[bytes, list[bytes]]] = []
        while True:
            raw = await monitor.read_response(timeout=10)
            match = _LINE.match(raw if isinstance(raw, bytes) else str(raw).encode())
            if match is None:
                continue
            args = [_unescape(a) for a in _ARG.findall(match[2])]
            name = args[0].upper() if args else b""
            if name == b"ECHO" and args[1:2] == [marker]:
                break
            if match[1] == b"lua" or name in (b"EVAL", b"EVALSHA"):
                lines.append((match[1], args))
    finally:
        await monitor.disconnect()
    eval_first = lines[0][0] != b"lua"
    for script, commands in _scripts(lines if eval_first else lines[::-1]):
        count = int(script[2])
        declared = {k.decode() for k in script[3 : 3 + count]}
        touched: set[str] = set()
        for command in commands:
            touched |= {k for k in await _keys_of(client, command) if k.startswith(prefix)}
        seen.declared |= {k for k in declared if k.startswith(prefix)}
        seen.touched |= touched
        seen.undeclared |= touched - declared


def _scripts(lines: list[tuple[bytes, list[bytes]]]) -> list[tuple[list[bytes], list[list[bytes]]]]:
    """(EVAL args, the commands it ran), for lines in EVAL-first order."""
    out: list[tuple[list[bytes], list[list[bytes]]]] = []
    for source, args in lines:
        if source != b"lua":
            out.append((args, []))
        elif out:
            out[-1][1].append(args)
    return out


async def _keys_of(client: aioredis.Redis, args: list[bytes]) -> list[str]:
    """The keys of one command, as the server itself finds them."""
    try:
        keys = await client.command_getkeys(*args)
    except ResponseError:  # a command without keys (TIME)
        return []
    return [k.decode() if isinstance(k, bytes) else str(k) for k in keys or ()]
