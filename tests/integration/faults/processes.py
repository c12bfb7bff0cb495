"""Real `switchboard serve` processes on one Redis and the fake Bot API, for fleet tests."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Literal

import httpx

from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.integration.faults.telegram_service import SECRET
from tests.support import free_port, wait_until

__all__ = ["Worker"]

SWITCHBOARD = str(Path(sys.executable).parent / "switchboard")


class Worker:
    """One `switchboard serve` process with its own HTTP port."""

    def __init__(
        self,
        fake: FakeTelegram,
        redis_url: str,
        prefix: str,
        data: Path,
        *,
        role: Literal["all", "ingress", "worker"] = "all",
        mode: Literal["polling", "webhook"] = "webhook",
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(data),
            "REDIS_URL": redis_url,
            "SWITCHBOARD_REDIS_PREFIX": prefix,
            "SWITCHBOARD_DATA_DIR": str(data),
            "SWITCHBOARD_HTTP_PORT": str(self.port),
            "SWITCHBOARD_ACCESS": "open",
            "SWITCHBOARD_LOCK_TTL_S": "2",
            "SWITCHBOARD_LOG_FORMAT": "json",
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_API_BASE": fake.base_url,
            "TELEGRAM_MODE": mode,
            "SWITCHBOARD_ROLE": role,
            "SWITCHBOARD_RATE_LIMIT": "100000",
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "SWITCHBOARD_PUBLIC_URL": "https://switchboard.example",
            # the cluster pass: REDIS_URL is then one node of a cluster
            "SWITCHBOARD_REDIS_CLUSTER": os.environ.get("SWITCHBOARD_REDIS_CLUSTER", "false"),
            **(env or {}),
        }
        self.data = data
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        log = open(self.data / "serve.log", "wb")  # noqa: ASYNC230, SIM115 - the child writes it
        self.proc = await asyncio.create_subprocess_exec(
            SWITCHBOARD, "serve", env=self.env, cwd=self.data, stdout=log, stderr=log
        )
        log.close()
        async with httpx.AsyncClient() as http:

            async def ready() -> bool:
                try:
                    r = await http.get(f"http://127.0.0.1:{self.port}/readyz")
                    return r.status_code == 200
                except httpx.TransportError:
                    return False

            await wait_until(ready, timeout=60, interval=0.2)

    def log_events(self, event: str) -> list[dict[str, object]]:
        """This process's JSON log lines for one event name."""
        out = []
        for line in (self.data / "serve.log").read_text(errors="replace").splitlines():
            if line.startswith("{") and f'"{event}"' in line:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record.get("event") == event:
                    out.append(record)
        return out

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}", timeout=30)

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
