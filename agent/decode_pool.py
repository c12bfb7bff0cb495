"""The worker's decode pool: images and PDFs decoded in child processes it can abandon.

Why not `asyncio.to_thread`: a thread cannot be stopped, so a file that costs minutes of CPU kept
a core (and the executor every other user's decoding shares) after the turn timed out, was
stopped or lost its lock. Here each decode runs in a child (`python -m agent.decoding`, started
on the first file and reused) and the work is bounded per worker, not per file:

- at most `DecodeLimits.workers` children, so at most that many cores decode at once;
- a byte budget (`DecodeLimits.memory_bytes`) shared by the concurrent decodes: an image reserves
  its decode cost (computed by the child from the header) before it is decoded, waits while the
  budget is taken, and is refused with a note when it alone needs more than the whole budget;
  each child's address space is limited to the budget as well, in case an estimate is short;
- a CPU-time limit per file (`DecodeLimits.cpu_s`, a CPU timer in the child) and a wall-clock
  backstop: past either the child is killed and the file gets a note that it was too costly;
- cancelling the awaiting task (turn timeout, `/stop`, a lost lock) kills the child at once.

A turn without files never touches this module; the pool is one per event loop (`shared()`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import signal
import struct
import sys
import weakref
from dataclasses import dataclass
from typing import Any

import structlog

from agent.decoding import costly_note, text_block

__all__ = ["ByteBudget", "DecodeLimits", "DecodePool", "configure", "shared"]

_log = structlog.get_logger(__name__)
_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """One worker's decoding bounds (`SWITCHBOARD_DECODE_*`)."""

    workers: int = 2
    memory_bytes: int = 512 * _MB
    cpu_s: float = 8.0

    @property
    def wall_s(self) -> float:
        """How long a child may take in wall time (a loaded machine runs it slowly) before it
        is killed even though its CPU limit has not passed: a backstop for a child that hangs."""
        return max(30.0, self.cpu_s * 6)


class ByteBudget:
    """Bytes shared by concurrent decodes, granted in arrival order (a big request is not
    starved by small ones); `release` is synchronous, so a cancelled decode always returns its
    share."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    async def acquire(self, amount: int) -> None:
        if amount > self.total:
            raise ValueError(f"{amount} bytes is over the whole budget of {self.total}")
        if not self._waiters and self.used + amount <= self.total:
            self.used += amount
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (amount, waiter)
        self._waiters.append(entry)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(amount)  # granted just as it was cancelled
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(entry)
                self._grant()
            raise

    def release(self, amount: int) -> None:
        self.used -= amount
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self.used + self._waiters[0][0] <= self.total:
            amount, waiter = self._waiters.popleft()
            if not waiter.done():
                self.used += amount
                waiter.set_result(None)


class _Abandoned(Exception):
    """The child was killed or died: the file gets a note instead of its content."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Child:
    """One decode child: frames over its stdin/stdout (`agent.decoding`)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, memory_bytes: int) -> _Child:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent.decoding",
            str(memory_bytes),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return cls(proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def send(self, message: dict[str, Any], data: bytes = b"") -> None:
        assert self.proc.stdin is not None
        body = json.dumps(message).encode()
        try:
            self.proc.stdin.write(struct.pack(">I", len(body)) + body + data)
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise _Abandoned(await self._why()) from exc

    async def recv(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                head = await self.proc.stdout.readexactly(4)
                (length,) = struct.unpack(">I", head)
                message: dict[str, Any] = json.loads(await self.proc.stdout.readexactly(length))
        except TimeoutError:
            raise _Abandoned("deadline") from None
        except asyncio.IncompleteReadError:
            raise _Abandoned(await self._why()) from None
        return message

    async def _why(self) -> str:
        code = await self.proc.wait()
        # past the CPU timer, the CPU limit's backstop, or its hard limit
        if code in (-signal.SIGPROF, -signal.SIGXCPU, -signal.SIGKILL):
            return "cpu"
        return "crash"

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


class DecodePool:
    """Decodes for one event loop (one worker process); see the module docstring."""

    def __init__(self, limits: DecodeLimits | None = None) -> None:
        self.limits = limits or DecodeLimits()
        self.budget = ByteBudget(self.limits.memory_bytes)
        self._slots = asyncio.Semaphore(self.limits.workers)
        self._idle: list[_Child] = []
        self._children: set[_Child] = set()
        self._reaping: set[asyncio.Task[int]] = set()

    def child_pids(self) -> list[int]:
        """The pids of the live children (idle or decoding)."""
        return [c.pid for c in self._children if c.proc.returncode is None]

    async def image(self, name: str, data: bytes, *, max_pixels: int) -> list[dict[str, Any]]:
        """An image's blocks (`agent.decoding.ImageJob`), or a note when it is too costly."""
        request = {"op": "image", "name": name, "max_pixels": max_pixels}
        return await self._run(request, data, kind="image")

    async def pdf(self, name: str, data: bytes, *, max_chars: int) -> list[dict[str, Any]]:
        """A PDF's text block (`agent.decoding.pdf_block`), or a note when it is too costly."""
        request = {"op": "pdf", "name": name, "max_chars": max_chars}
        return await self._run(request, data, kind="PDF")

    async def aclose(self) -> None:
        """Kill the children (a child also exits by itself when its worker's pipe closes)."""
        for child in list(self._children):
            self._discard(child)
        if self._reaping:
            await asyncio.gather(*self._reaping, return_exceptions=True)

    async def _run(
        self, request: dict[str, Any], data: bytes, *, kind: str
    ) -> list[dict[str, Any]]:
        async with self._slots:
            child = self._idle.pop() if self._idle else await self._spawn()
            try:
                blocks = await self._exchange(child, request, data)
            except _Abandoned as exc:
                self._discard(child)
                _log.warning(
                    "attachment.decode_abandoned", kind=kind, reason=exc.reason, bytes=len(data)
                )
                return [self._abandoned_note(str(request["name"]), kind, exc.reason)]
            except BaseException:  # cancelled (turn timeout, /stop, lost lock) or broken
                self._discard(child)
                raise
            self._idle.append(child)
            return blocks

    async def _spawn(self) -> _Child:
        child = await _Child.start(self.limits.memory_bytes)
        self._children.add(child)
        return child

    async def _exchange(
        self, child: _Child, request: dict[str, Any], data: bytes
    ) -> list[dict[str, Any]]:
        header = {**request, "size": len(data), "cpu_s": self.limits.cpu_s}
        await child.send(header, data)
        reserved = 0
        try:
            while True:
                message = await child.recv(self.limits.wall_s)
                if "need" in message:
                    need = int(message["need"])
                    if need > self.budget.total:
                        await child.send({"go": False})
                        _log.info(
                            "attachment.image_too_costly", need=need, budget=self.budget.total
                        )
                        why = f"about {need // _MB:,} MB to decode, over the {self.budget.total // _MB:,} MB allowed"
                        return [
                            costly_note(str(request["name"]), f"image, {message.get('size')}", why)
                        ]
                    await self.budget.acquire(need)
                    reserved = need
                    await child.send({"go": True})
                    continue
                if "error" in message:
                    raise _Abandoned(str(message["error"]))
                if refusal := message.get("refusal"):
                    _log.info("attachment.image_refused", **refusal)
                blocks: list[dict[str, Any]] = message["blocks"]
                return blocks
        finally:
            if reserved:
                self.budget.release(reserved)

    def _abandoned_note(self, name: str, kind: str, reason: str) -> dict[str, Any]:
        if reason == "crash":
            return text_block(f"[file: {name} ({kind}): could not be read]")
        why = {
            "cpu": f"over {self.limits.cpu_s:g} s of work",
            "memory": "over the memory allowed for reading files",
        }.get(reason, "it took too long")
        return costly_note(name, kind, why)

    def _discard(self, child: _Child) -> None:
        child.kill()
        self._children.discard(child)
        with contextlib.suppress(ValueError):
            self._idle.remove(child)
        task = asyncio.get_running_loop().create_task(child.proc.wait())
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)


_limits = DecodeLimits()
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DecodePool] = (
    weakref.WeakKeyDictionary()
)


def configure(limits: DecodeLimits) -> None:
    """The bounds of pools made from now on (the service sets them from its settings at start)."""
    global _limits
    _limits = limits


def shared() -> DecodePool:
    """This event loop's pool, made on first use."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = DecodePool(_limits)
    return pool
