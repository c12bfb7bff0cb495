"""Redis connection: an external `REDIS_URL`, or an embedded Valkey server owning a data dir
(`embedded.py`), which runs with AOF persistence so a restart keeps every thread.

With `cluster=True` (`SWITCHBOARD_REDIS_CLUSTER`) the URL names one node of a Redis/Valkey
Cluster and the client is a `RedisCluster` that discovers the others. Every module works on both:
keys that one script or MULTI touches share a hash tag (see `keys.py`). The embedded store is
always a single node. A `redis+sentinel://` URL reaches the primary Sentinel names, and follows
it across failovers (`sentinel.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import parse_qs, urlsplit

import redis.asyncio as redis
import structlog
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
from storage.embedded import EmbeddedValkey
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
