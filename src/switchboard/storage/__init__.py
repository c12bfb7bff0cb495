"""Everything Switchboard keeps in Redis, behind verbs (claim, acquire, push, drain), never raw keys."""

from switchboard.storage.connection import EmbeddedValkey, connect, open_redis
from switchboard.storage.dedupe import DEDUPE_TTL_S, Dedupe
from switchboard.storage.keys import Keys
from switchboard.storage.locks import LOCK_TTL_S, Lock, ThreadLocks
from switchboard.storage.pending import PENDING_CAP, PendingMessage, PendingQueue
from switchboard.storage.questions import PendingQuestion, PendingQuestions
from switchboard.storage.ratelimit import RateDecision, RateLimiter
from switchboard.storage.thread_map import THREAD_TTL_S, ThreadMap
from switchboard.storage.warnings import PendingWarnings

__all__ = [
    "DEDUPE_TTL_S",
    "LOCK_TTL_S",
    "PENDING_CAP",
    "THREAD_TTL_S",
    "Dedupe",
    "EmbeddedValkey",
    "Keys",
    "Lock",
    "PendingMessage",
    "PendingQuestion",
    "PendingQuestions",
    "PendingQueue",
    "PendingWarnings",
    "RateDecision",
    "RateLimiter",
    "ThreadLocks",
    "ThreadMap",
    "connect",
    "open_redis",
]
