"""Everything Switchboard keeps in Redis, behind verbs (claim, acquire, push, drain), never raw keys.

The values these verbs take and return (`Lock`, `Slot`, `Entry`, `PendingQuestion`, …) live in the
leaf `switchboard.state`, so the channel manager can use them without importing `storage`; they
are re-exported here for storage's own users."""

from storage.accounts import (
    Account,
    AccountError,
    AccountExists,
    AccountNotFound,
    Accounts,
    InvalidAccountName,
)
from storage.admission import Admission
from storage.bindings_store import BindingsStore, StoredBindings
from storage.checkpoint import FencedOut, RedisCheckpointSaver
from storage.connection import (
    DEFAULT_MAX_CONNECTIONS,
    EmbeddedValkey,
    connect,
    maxmemory_policy,
    open_redis,
    warn_if_unauthenticated,
)
from storage.console_sessions import CONSOLE_SESSION_TTL_S, ConsoleSessions
from storage.context import CONTEXT_CACHE_TTL_S, OBSERVED_TTL_S, ContextRecords, ContextState
from storage.dedupe import DEDUPE_TTL_S, Claim, Dedupe
from storage.failure_log import FAILURES_KEPT, FAILURES_TTL_S, FailureLog, FailureRecord
from storage.feedback import FeedbackStore, VoteChange
from storage.inbox import INBOX_MAX_LEN, Entry, Inbox, InboxFull, InboxSummary
from storage.keys import Keys
from storage.leases import LEASE_TTL_S, Leases
from storage.links import (
    TOKEN_TTL_S,
    AlreadyLinked,
    Link,
    LinkError,
    LinkKind,
    LinkNotFound,
    LinkRateLimited,
    Links,
    LinkToken,
    TokenGone,
    TokenNotFound,
    TokenState,
    UnlinkResult,
    UnlinkStatus,
    WrongTokenKind,
    is_wellformed_id,
)
from storage.locks import LOCK_TTL_S, Lock, ThreadLocks
from storage.notices import NOTICE_TTL_S, NoticeLimiter
from storage.orphans import Orphans
from storage.questions import PendingQuestion, PendingQuestions
from storage.ratelimit import RateDecision, RateLimiter
from storage.remote_threads import RemoteThreads
from storage.send_windows import SendWindow, SendWindows
from storage.thread_map import THREAD_TTL_S, Conversation, ThreadMap
from storage.thread_queue import (
    QUEUE_CAP,
    Ledger,
    QueuedItem,
    Slot,
    SlotState,
    ThreadQueue,
    ThreadState,
)
from storage.usage import (
    TURN_MARK_TTL_S,
    Spender,
    UsageLedger,
    UsageLimits,
    UsageSnapshot,
    Window,
    WindowKind,
    windows_at,
)
from storage.warnings import PendingWarnings

__all__ = [
    "CONSOLE_SESSION_TTL_S",
    "CONTEXT_CACHE_TTL_S",
    "DEDUPE_TTL_S",
    "DEFAULT_MAX_CONNECTIONS",
    "FAILURES_KEPT",
    "FAILURES_TTL_S",
    "INBOX_MAX_LEN",
    "LEASE_TTL_S",
    "LOCK_TTL_S",
    "NOTICE_TTL_S",
    "OBSERVED_TTL_S",
    "QUEUE_CAP",
    "THREAD_TTL_S",
    "TOKEN_TTL_S",
    "TURN_MARK_TTL_S",
    "Account",
    "AccountError",
    "AccountExists",
    "AccountNotFound",
    "Accounts",
    "Admission",
    "AlreadyLinked",
    "BindingsStore",
    "Claim",
    "ConsoleSessions",
    "ContextRecords",
    "ContextState",
    "Conversation",
    "Dedupe",
    "EmbeddedValkey",
    "Entry",
    "FailureLog",
    "FailureRecord",
    "FeedbackStore",
    "FencedOut",
    "Inbox",
    "InboxFull",
    "InboxSummary",
    "InvalidAccountName",
    "Keys",
    "Leases",
    "Ledger",
    "Link",
    "LinkError",
    "LinkKind",
    "LinkNotFound",
    "LinkRateLimited",
    "LinkToken",
    "Links",
    "Lock",
    "NoticeLimiter",
    "Orphans",
    "PendingQuestion",
    "PendingQuestions",
    "PendingWarnings",
    "QueuedItem",
    "RateDecision",
    "RateLimiter",
    "RedisCheckpointSaver",
    "RemoteThreads",
    "SendWindow",
    "SendWindows",
    "Slot",
    "SlotState",
    "Spender",
    "StoredBindings",
    "ThreadLocks",
    "ThreadMap",
    "ThreadQueue",
    "ThreadState",
    "TokenGone",
    "TokenNotFound",
    "TokenState",
    "UnlinkResult",
    "UnlinkStatus",
    "UsageLedger",
    "UsageLimits",
    "UsageSnapshot",
    "VoteChange",
    "Window",
    "WindowKind",
    "WrongTokenKind",
    "connect",
    "is_wellformed_id",
    "maxmemory_policy",
    "open_redis",
    "warn_if_unauthenticated",
    "windows_at",
]
