"""Redis errors as Switchboard errors: a transient one (connection, timeout, a server still
loading or failing over) is worth another attempt; any other is not (a script error, OOM, a
denied command), and retrying it would only repeat the failure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from redis.exceptions import (
    BusyLoadingError,
    ClusterDownError,
    ConnectionError,
    MasterDownError,
    ReadOnlyError,
    RedisError,
    TimeoutError,
    TryAgainError,
)

from switchboard.errors import StorageError, TransientStorageError

__all__ = ["redis_errors", "storage_error"]

_TRANSIENT = (
    BusyLoadingError,
    ClusterDownError,
    ConnectionError,
    MasterDownError,
    ReadOnlyError,  # a replica promoted under us: the client reconnects to the new primary
    TimeoutError,
    TryAgainError,
)


def storage_error(what: str, exc: RedisError) -> StorageError:
    """`<what> failed: <redis error class>`; the class only, never the text (it may hold keys)."""
    kind = TransientStorageError if isinstance(exc, _TRANSIENT) else StorageError
    return kind(f"{what} failed: {exc.__class__.__name__}")


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Run the block; a Redis error in it leaves as `storage_error(what, exc)` (any other
    exception passes through untouched)."""
    try:
        yield
    except RedisError as exc:
        raise storage_error(what, exc) from None
