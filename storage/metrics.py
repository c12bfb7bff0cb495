"""Storage-side Prometheus metrics (the channel layer's live in `channels/metrics.py`)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["INBOX_LAG", "INBOX_PENDING", "INBOX_RECLAIMED", "POOL_WAIT"]

POOL_WAIT = Histogram(
    "switchboard_redis_pool_wait_seconds",
    "Time a caller waited for a free Redis connection (one that found one free is not counted)",
    buckets=(0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30),
)
INBOX_RECLAIMED = Counter(
    "switchboard_inbox_reclaimed_total", "Inbox entries taken over from a consumer that stopped"
)
INBOX_PENDING = Gauge(
    "switchboard_inbox_pending", "Inbox entries handed to a worker and not yet finished"
)
INBOX_LAG = Gauge("switchboard_inbox_lag", "Inbox entries no worker has read yet")
