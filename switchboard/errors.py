"""Switchboard's error tree. Any layer may raise these; only the manager turns them into chat text.

    SwitchboardError                 category
    ├── ConfigError                  "config"
    ├── StorageError                 "storage"
    │   ├── TransientStorageError    (connection, timeout, loading: worth another attempt)
    │   └── FencedOut                (the thread lock is no longer the writer's)
    ├── AgentError                   "agent"
    └── PlatformError(platform, code) "platform"
        ├── PlatformRateLimited(retry_after)   "rate_limited"
        ├── PlatformAuthError                  "auth"
        └── FileTooLarge(size, limit)          "file_too_large"

SDK, redis and provider exceptions are translated at the layer that meets them and never leave it.
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "ConfigError",
    "FencedOut",
    "FileTooLarge",
    "PlatformAuthError",
    "PlatformError",
    "PlatformRateLimited",
    "StorageError",
    "SwitchboardError",
    "TransientStorageError",
    "is_transient",
]


class SwitchboardError(Exception):
    """Base of every error we raise on purpose; `category` picks the user-facing message."""

    category: str = "internal"


class ConfigError(SwitchboardError):
    category = "config"


class StorageError(SwitchboardError):
    category = "storage"


class TransientStorageError(StorageError):
    """Redis was unreachable, timed out or still loading: the same step may well work soon."""


class FencedOut(StorageError):
    """The thread lock is no longer the writer's: nothing was written (the checkpoint saver
    checks the fence; the manager takes it as a lost lock)."""


class AgentError(SwitchboardError):
    category = "agent"


class PlatformError(SwitchboardError):
    category = "platform"

    def __init__(self, message: str, *, platform: str, code: str | int | None = None) -> None:
        super().__init__(message)
        self.platform = platform
        self.code = code


class PlatformRateLimited(PlatformError):
    category = "rate_limited"

    def __init__(
        self, message: str, *, platform: str, retry_after: float, code: str | int | None = 429
    ) -> None:
        super().__init__(message, platform=platform, code=code)
        self.retry_after = retry_after


def is_transient(exc: BaseException) -> bool:
    """Whether trying the same thing later can succeed: storage that was unreachable, a
    platform rate limit, a platform outage (5xx) or a network failure on the way to it."""
    if isinstance(exc, TransientStorageError | PlatformRateLimited):
        return True
    if isinstance(exc, PlatformError):
        code = exc.code
        return code in ("network", "timeout") or (isinstance(code, int) and code >= 500)
    return False


class PlatformAuthError(PlatformError):
    category = "auth"


class FileTooLarge(PlatformError):
    """A file over a size limit (an inbound fetch or an outbound upload): refused before or
    while its bytes move, never buffered whole. `size` is what is known (0 = unknown)."""

    category = "file_too_large"

    def __init__(self, message: str, *, platform: str, size: int = 0, limit: int = 0) -> None:
        super().__init__(message, platform=platform, code="too_large")
        self.size = size
        self.limit = limit
