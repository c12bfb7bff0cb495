"""Pieces the process benchmarks share (bench/bot_floor.py, bench/fleet.py): child processes that
talk JSON lines, CPU time from /proc, a scrubbed environment, Valkey CPU, the commit measured.

Every party of a bench runs in its own process so each one's CPU time is its own; these helpers
start, read and stop them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_SCRUBBED_ENV = ("SWITCHBOARD_", "TELEGRAM_", "SLACK_", "DISCORD_", "OPENAI_", "ANTHROPIC_")
_SCRUBBED_ENV_ALSO = ("REDIS_URL", "LANGCHAIN_", "LANGSMITH_", "LANGFUSE_")

__all__ = [
    "REPO",
    "Child",
    "Harness",
    "Tags",
    "clean_env",
    "commit_of",
    "emit",
    "free_port",
    "machine_busy",
    "proc_cpu",
    "proc_cpu_path",
    "redis_cpu",
    "tail",
    "threads_cpu",
]


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used so far."""
    return proc_cpu_path(Path(f"/proc/{pid}/stat"))  # utime, stime: fields 14, 15 of proc(5)


def threads_cpu(pid: int) -> dict[int, float]:
    """CPU seconds per thread id (the main thread's id is the pid)."""
    out: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            out[int(task.name)] = proc_cpu_path(task / "stat")
    return out


def proc_cpu_path(stat_path: Path) -> float:
    fields = stat_path.read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs from /proc/stat: how loaded the whole machine was over
    a span, other tenants included (the machine benches run on is often shared)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])  # guest time is already in user/nice
    return float(total - idle), float(total)


def emit(obj: dict[str, Any]) -> None:
    """One JSON line to the driver (a fake's answer)."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


@dataclass
class Child:
    """A process of ours; the fakes talk JSON lines over stdin/stdout."""

    name: str
    proc: asyncio.subprocess.Process
    log: Path

    async def request(self, *, reply_within: float = 300.0, **op: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(op) + "\n").encode())
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), reply_within)
        if not line:
            raise RuntimeError(f"{self.name} exited:\n{tail(self.log)}")
        return dict(json.loads(line))

    async def stop(self, grace: float = 20.0) -> None:
        if self.proc.returncode is not None:
            return
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if self.proc.stdout is None:  # a bot: ask it to shut down like an operator would
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()


def tail(path: Path, lines: int = 25) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything that configures Switchboard, a platform or tracing, so
    a developer's shell cannot change what a bench measures."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_SCRUBBED_ENV) and not k.startswith(_SCRUBBED_ENV_ALSO)
    }
    env.update(extra)
    return env


class Harness:
    """Owns every child process; `close` stops them all."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.children: list[Child] = []

    async def spawn(
        self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path, talk: bool
    ) -> Child:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as log_file:  # noqa: ASYNC230 - once per process start
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=subprocess.PIPE if talk else subprocess.DEVNULL,
                stdout=subprocess.PIPE if talk else log_file,
                stderr=log_file,
                cwd=str(cwd),
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal reaches only the driver
            )
        child = Child(name, proc, log)
        self.children.append(child)
        return child

    async def fake(self, script: str, role: str, *extra: str) -> tuple[Child, str]:
        """`script --role ROLE` as a talking child; its first line is `{"base_url": …}`."""
        argv = [sys.executable, script, "--role", role, *extra]
        child = await self.spawn(role, argv, env=clean_env(), cwd=REPO, talk=True)
        assert child.proc.stdout is not None
        line = await asyncio.wait_for(child.proc.stdout.readline(), 30)
        if not line:
            raise RuntimeError(f"{role} did not start:\n{tail(child.log)}")
        return child, str(json.loads(line)["base_url"])

    async def retire(self, *children: Child) -> None:
        """Stop these children now (in this order) and forget them."""
        for child in children:
            await child.stop()
            self.children.remove(child)

    async def close(self) -> None:
        for child in reversed(self.children):
            await child.stop()
        self.children.clear()


class Tags:
    """Unique message tags, echoed back by the fake model so answers match messages exactly."""

    def __init__(self) -> None:
        self._n = 0

    def take(self, count: int) -> list[str]:
        out = [f"q{self._n + i:07d}" for i in range(count)]
        self._n += count
        return out


async def redis_cpu(url: str) -> float:
    """Valkey's own CPU seconds so far (INFO cpu: main thread and I/O threads)."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        info = await client.info("cpu")
    finally:
        await client.aclose()
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def redis_commands(url: str) -> dict[str, int]:
    """Commands Valkey has run so far, by name (INFO commandstats; a script counts as its
    EVALSHA or FCALL, and the commands it runs count too)."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        info = await client.info("commandstats")
    finally:
        await client.aclose()
    return {name.removeprefix("cmdstat_"): int(stat["calls"]) for name, stat in info.items()}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def commit_of(root: Path) -> str:
    """Short HEAD of the checkout measured, flagged when its code has uncommitted changes."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return out.stdout.strip()

    dirty = git(
        "status", "--porcelain", "--", "switchboard", "channels", "agent", "storage", "service"
    )
    return f"{git('rev-parse', '--short', 'HEAD') or '?'}{' +uncommitted changes' if dirty else ''}"
