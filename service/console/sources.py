"""What the console reads and changes: the same stores and desks the JSON admin API and the CLI
use, handed in by the composition root (`service/app.py`), never built twice."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from channels.usage import UsageDesk
from service.settings import Settings
from storage import (
    Accounts,
    ConsoleSessions,
    FailureLog,
    FeedbackStore,
    Inbox,
    Leases,
    Links,
    RedisCheckpointSaver,
    ThreadMap,
    ThreadQueue,
)

__all__ = ["ConnectionState", "ConsoleSources", "LeaseState"]


@dataclass(frozen=True, slots=True)
class ConnectionState:
    """One platform adapter of this process."""

    platform: str
    healthy: bool | None  # None: the adapter has no connection that can drop (webhooks)


@dataclass(frozen=True, slots=True)
class LeaseState:
    """One exclusive connection (a poller, a gateway shard) and whether this process holds it."""

    name: str
    held_here: bool


@dataclass(frozen=True, slots=True)
class ConsoleSources:
    settings: Settings
    accounts: Accounts
    links: Links
    sessions: ConsoleSessions
    failures: FailureLog
    inbox: Inbox
    leases: Leases
    redis: Any  # the service's client (single node or cluster), for INFO
    threads: ThreadMap  # with the service's thread TTL: activity is read from it
    queue: ThreadQueue
    checkpoints: RedisCheckpointSaver  # read only
    usage: UsageDesk | None = None
    feedback: FeedbackStore | None = None  # votes on answers (None: SWITCHBOARD_FEEDBACK=off)
    connections: Callable[[], Sequence[ConnectionState]] = tuple
    lease_states: Callable[[], Sequence[LeaseState]] = tuple
    redis_policy: Callable[[], str | None] = lambda: None
