"""Redis through Sentinel: `REDIS_URL=redis+sentinel://[:password@]host:port[,host:port]/service/db`.

The form redis-py and Celery users know: the Sentinels' addresses, the monitored service (the
primary's name in `sentinel.conf`) and the database (default 0). The password, if any, is the
primary's; Sentinels are asked without one. The client is redis-py's Sentinel support behind our
waiting pool: every new connection asks a Sentinel where the primary is, so after a failover
connections to the old primary fail (or answer READONLY, which redis-py turns into a connection
error), are dropped, and the retry reconnects to the promoted replica. Scripts are reloaded on the
new primary by redis-py on NOSCRIPT (its script cache is not replicated), and our locks and leases
carry fencing tokens, so a write the old primary took but never replicated is noticed by the
holder's next check, never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.exceptions import ConnectionError, TimeoutError

from storage.autopipeline import AutoPipelineRedis
from switchboard.errors import StorageError

__all__ = ["SCHEME", "SentinelUrl", "connect_sentinel", "is_sentinel_url", "parse_sentinel_url"]

SCHEME = "redis+sentinel"
_SENTINEL_TIMEOUT_S = 2.0  # a dead Sentinel is skipped quickly; the next one is asked


@dataclass(frozen=True, slots=True)
class SentinelUrl:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None

    def describe(self) -> str:
        """The Sentinels and the service, never the password."""
        hosts = ",".join(f"{h}:{p}" for h, p in self.sentinels)
        return f"{hosts} (service {self.service})"


def is_sentinel_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() == SCHEME


def parse_sentinel_url(url: str) -> SentinelUrl:
    """Undo the URL form; a malformed one raises StorageError without echoing it (it may hold a
    password)."""
    bad = StorageError(
        "REDIS_URL is not a valid redis+sentinel://host:port[,host:port]/service_name[/db] URL "
        "(percent-encode special characters in the password)"
    )
    parts = urlsplit(url)
    if parts.scheme.lower() != SCHEME:
        raise bad
    auth, _, hosts = parts.netloc.rpartition("@")
    username, _, password = auth.partition(":") if auth else ("", "", "")
    sentinels: list[tuple[str, int]] = []
    for host in hosts.split(","):
        name, _, port = host.strip().rpartition(":") if ":" in host else (host.strip(), "", "")
        if not name or (port and not port.isdigit()):
            raise bad
        sentinels.append((name.strip("[]"), int(port or 26379)))
    path = [p for p in parts.path.split("/") if p]
    if not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise bad
    return SentinelUrl(
        sentinels=tuple(sentinels),
        service=unquote(path[0]),
        db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None,
        password=unquote(password) or None,
    )


def connect_sentinel(
    url: str, *, pool: type[Any], max_connections: int, pool_timeout_s: float, retry: Retry
) -> redis.Redis:
    """A client of the service's current primary; `pool` is the waiting pool of one node
    (`connection.WaitingPool`), mixed with redis-py's Sentinel pool so callers wait for a free
    connection here too."""
    spec = parse_sentinel_url(url)
    waiting = type("WaitingSentinelPool", (SentinelConnectionPool, pool), {})
    sentinel = Sentinel(
        list(spec.sentinels),
        sentinel_kwargs={
            "socket_connect_timeout": _SENTINEL_TIMEOUT_S,
            "socket_timeout": _SENTINEL_TIMEOUT_S,
        },
    )
    client: _SentinelClient = sentinel.master_for(
        spec.service,
        redis_class=_SentinelClient,
        connection_pool_class=waiting,
        db=spec.db,
        username=spec.username,
        password=spec.password,
        max_connections=max_connections,
        timeout=pool_timeout_s,
        socket_connect_timeout=5,
        socket_timeout=30,
        health_check_interval=30,
        retry=retry,
        retry_on_error=[ConnectionError, TimeoutError],
        decode_responses=False,
    )
    client.sentinels = sentinel
    return client


class _SentinelClient(AutoPipelineRedis):
    """The primary's client; closing it closes the connections to the Sentinels too."""

    # not `sentinel`: that name is redis-py's SENTINEL command method on every client
    sentinels: Sentinel | None = None

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        if self.sentinels is not None:
            await self.sentinels.aclose()
