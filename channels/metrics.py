"""Prometheus metrics, defined once; any layer may record, only `service/` exposes `/metrics`.

Labels are small closed sets (platform, category, outcome), never ids, so cardinality stays flat.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "BUDGET_REFUSALS",
    "CONTEXT_OBSERVED",
    "CONTEXT_READS",
    "DEDUPE_HITS",
    "ERRORS",
    "FEEDBACK",
    "INGRESS_PAUSES",
    "INGRESS_WAITING",
    "MESSAGES_IN",
    "MESSAGES_OUT",
    "MODEL_SPEND",
    "MODEL_TOKENS",
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
# Model names are a small closed set too: the configured model(s), as the provider names them.
MODEL_SPEND = Counter(
    "switchboard_model_spend_microdollars_total",
    "Model spend in microdollars (provider-reported, else tokens x SWITCHBOARD_MODEL_PRICE)",
    ["platform", "model"],
)
MODEL_TOKENS = Counter(
    "switchboard_model_tokens_total",
    "Model tokens, by direction (input/output)",
    ["platform", "model", "direction"],
)
BUDGET_REFUSALS = Counter(
    "switchboard_budget_refusals_total",
    "Messages refused because the sender's usage budget is spent",
    ["platform", "window"],
)
INGRESS_WAITING = Gauge(
    "switchboard_ingress_waiting",
    "Events read from a gateway that the inbox has not taken yet",
    ["platform"],
)
INGRESS_PAUSES = Counter(
    "switchboard_ingress_pauses_total",
    "Times a gateway stopped being read because too many events waited for the inbox",
    ["platform"],
)
CONTEXT_READS = Counter(
    "switchboard_context_reads_total",
    "Conversation-context reads at turn time, by result (fetched, cached, rate_limited, denied, "
    "timeout, failed); every result but the first two left the turn without platform context",
    ["platform", "result"],
)
CONTEXT_OBSERVED = Counter(
    "switchboard_context_observed_total",
    "Group messages recorded as context without being answered (SWITCHBOARD_TELEGRAM_OBSERVE)",
    ["platform"],
)
FEEDBACK = Counter(
    "switchboard_feedback_total",
    "Votes on answers (👍 up, 👎 down) cast or changed (SWITCHBOARD_FEEDBACK)",
    ["platform", "value"],
)
