"""A real Sentinel deployment on loopback: a primary, a replica and three Sentinels (Debian's
`redis-server` and `redis-sentinel`), with the primary killed (`kill -9`) on demand.

Sentinels judge a primary down after 1 s without a reply and fail over within a few seconds;
`wait_failover` waits for them to name the replica. Tests skip when the binaries are missing
(`.ci/run` installs them)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from tests.support import free_port, wait_until

__all__ = ["SERVICE", "SentinelGroup", "needs_sentinel"]

SERVICE = "sbprimary"

needs_sentinel = pytest.mark.skipif(
    shutil.which("redis-server") is None
    or shutil.which("redis-sentinel") is None
    or bool(os.environ.get("REDIS_URL")),
    reason="needs redis-server and redis-sentinel (Debian's packages, installed by .ci/run); "
    "brings its own servers, so it runs once, in the pass without REDIS_URL",
)


class SentinelGroup:
    """Start with `await start()`, end with `await stop()` (kills every process it started)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.primary_port = free_port()
        self.replica_port = free_port()
        self.sentinel_ports = [free_port() for _ in range(3)]
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}/0"

    def _spawn(self, port: int, args: list[str]) -> None:
        with open(self.dir / f"{port}.log", "wb") as log:  # the child keeps its own copy
            self._procs[port] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def _server(self, port: int, *extra: str) -> None:
        data = self.dir / str(port)
        data.mkdir(parents=True, exist_ok=True)
        args = ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--save", ""]
        self._spawn(port, ["redis-server", *args, "--appendonly", "no", *extra])

    async def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._server(self.primary_port)
        self._server(self.replica_port, "--replicaof", "127.0.0.1", str(self.primary_port))
        for port in self.sentinel_ports:
            conf = self.dir / f"sentinel-{port}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.dir}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                f"sentinel failover-timeout {SERVICE} 10000\n"
                f"sentinel parallel-syncs {SERVICE} 1\n",
                encoding="utf-8",
            )
            self._spawn(port, ["redis-sentinel", str(conf)])
        await wait_until(self._replica_in_sync, timeout=30, interval=0.1)
        await wait_until(self._sentinels_see_the_replica, timeout=30, interval=0.1)

    async def _replica_in_sync(self) -> bool:
        async with aioredis.Redis(port=self.replica_port) as r:
            try:
                info = await r.info("replication")
            except (aioredis.ConnectionError, OSError):
                return False
        return info.get("master_link_status") == "up"

    async def _sentinels_see_the_replica(self) -> bool:
        for port in self.sentinel_ports:
            async with aioredis.Redis(port=port) as s:
                try:
                    replicas = await s.execute_command("SENTINEL", "REPLICAS", SERVICE)
                    sentinels = await s.execute_command("SENTINEL", "SENTINELS", SERVICE)
                except (aioredis.ConnectionError, aioredis.ResponseError, OSError):
                    return False
            if not replicas or len(sentinels) < 2:
                return False
        return True

    async def primary(self) -> int:
        """The port Sentinels name as the primary now."""
        async with aioredis.Redis(port=self.sentinel_ports[0]) as s:
            _host, port = await s.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
        return int(port)

    def kill_primary(self) -> None:
        self._procs[self.primary_port].send_signal(signal.SIGKILL)
        self._procs[self.primary_port].wait()

    async def restart_old_primary(self) -> None:
        """Start the killed primary again as the new primary's replica (what Sentinel would
        turn it into: started as a primary, it waits for a Sentinel's next INFO round, which a
        loaded 2-core CI host once delayed past 150 s)."""
        self._server(self.primary_port, "--replicaof", "127.0.0.1", str(self.replica_port))
        self.primary_port, self.replica_port = self.replica_port, self.primary_port
        # A full sync from a primary in mid-burst: on a 2-core CI host running four fault tests
        # at once that once took longer than 60 s.
        await wait_until(self._replica_in_sync, timeout=150, interval=0.2)

    async def wait_failover(self, timeout: float = 60.0) -> None:
        async def promoted() -> bool:
            if await self.primary() != self.replica_port:
                return False
            async with aioredis.Redis(port=self.replica_port) as r:
                return (await r.info("replication")).get("role") == "master"

        await wait_until(promoted, timeout=timeout, interval=0.2)

    def pause_replica(self) -> None:
        """Stop the replica (SIGSTOP) so it takes no write: WAIT then times out."""
        self._procs[self.replica_port].send_signal(signal.SIGSTOP)

    def resume_replica(self) -> None:
        self._procs[self.replica_port].send_signal(signal.SIGCONT)

    async def stop(self) -> None:
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
        await asyncio.gather(*(asyncio.to_thread(p.wait) for p in self._procs.values()))
        self._procs.clear()
