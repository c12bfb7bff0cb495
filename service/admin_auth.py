"""The admin key check shared by every `/api/admin/*` route, with wrong keys rate limited.

A client address that sent `limit` wrong keys within `window_s` is refused (429 with
Retry-After) until the oldest of them leaves the window, *whatever key it sends*: answering a
right key during the lockout would let a guesser keep guessing. The count is per process, in
memory: it guards against guessing, which a 24-character key already makes hopeless, and against
log floods, and it must not depend on Redis being up. Several ingress processes each allow
`limit`. The address is the TCP peer's: uvicorn believes `X-Forwarded-For` only from the
addresses in SWITCHBOARD_TRUSTED_PROXIES (none by default), so a client can neither rotate the
header to escape the count nor name another address to lock it out; behind a reverse proxy not
listed there, every client is the proxy's address and shares one budget.

Wrong keys are logged as `admin.auth_failed` with the client address and route, never the key.
"""

from __future__ import annotations

import hmac
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import structlog

__all__ = ["AdminAuth", "AdminVerdict", "Verdict"]

_MAX_CLIENTS = 10_000  # addresses remembered at once; the stalest is forgotten first

_log = structlog.get_logger(__name__)


class Verdict(StrEnum):
    OK = "ok"
    DISABLED = "disabled"  # no admin key configured
    MISSING = "missing"
    WRONG = "wrong"
    LIMITED = "limited"  # too many wrong keys from this address


@dataclass(frozen=True, slots=True)
class AdminVerdict:
    verdict: Verdict
    retry_after_s: int = 0  # whole seconds, for Retry-After (LIMITED only)


class AdminAuth:
    """Compares keys in constant time and counts wrong ones per client address."""

    def __init__(
        self,
        key: str,
        *,
        limit: int = 10,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._key = key.encode("utf-8")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def check(self, given: str | None, *, client: str, route: str = "") -> AdminVerdict:
        """The verdict on one request's key (`given` is None when no Authorization was sent)."""
        if not self._key:
            return AdminVerdict(Verdict.DISABLED)
        now = self._clock()
        failures = self._recent(client, now)
        if failures is not None and len(failures) >= self.limit:
            wait = failures[0] + self.window_s - now
            _log.warning("admin.auth_limited", client=client, route=route)
            return AdminVerdict(Verdict.LIMITED, retry_after_s=max(1, math.ceil(wait)))
        if given is None or not given:
            return AdminVerdict(Verdict.MISSING)
        if hmac.compare_digest(given.encode("utf-8"), self._key):
            return AdminVerdict(Verdict.OK)
        self._fail(client, now)
        _log.warning("admin.auth_failed", client=client, route=route)
        return AdminVerdict(Verdict.WRONG)

    def _recent(self, client: str, now: float) -> deque[float] | None:
        failures = self._failures.get(client)
        if failures is None:
            return None
        while failures and failures[0] <= now - self.window_s:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        return failures

    def _fail(self, client: str, now: float) -> None:
        failures = self._failures.pop(client, None) or deque(maxlen=self.limit)
        failures.append(now)
        self._failures[client] = failures  # most recent last, so the stalest goes first
        while len(self._failures) > _MAX_CLIENTS:
            self._failures.popitem(last=False)
