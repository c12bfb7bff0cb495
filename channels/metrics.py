"""Prometheus metrics, defined once; any layer may record, only `service/` exposes `/metrics`.

Labels are small closed sets (platform, category, outcome), never ids, so cardinality stays flat.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "DEDUPE_HITS",
    "ERRORS",
    "MESSAGES_IN",
    "MESSAGES_OUT",
    "QUEUE_DEPTH",
    "TURN_LATENCY",
]

MESSAGES_IN = Counter(
    "switchboard_messages_in_total", "Inbound messages handed to the manager", ["platform"]
)
MESSAGES_OUT = Counter("switchboard_messages_out_total", "Messages sent to platforms", ["platform"])
TURN_LATENCY = Histogram(
    "switchboard_turn_seconds",
    "Agent turn wall time, from lock to reply sent",
    ["platform"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
)
QUEUE_DEPTH = Gauge(
    "switchboard_pending_queue_depth", "Length of the last pending queue pushed to", ["platform"]
)
DEDUPE_HITS = Counter(
    "switchboard_dedupe_hits_total", "Redeliveries dropped by dedupe", ["platform"]
)
ERRORS = Counter("switchboard_errors_total", "Errors shown to users, by category", ["category"])
