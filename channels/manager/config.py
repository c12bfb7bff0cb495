"""What the manager is built from: its settings, its stores and the agent it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agent.result import TurnContext, TurnResult
from channels.manager.gates.feedback import VoteStore
from channels.manager.ports import (
    AdmissionStore,
    ContextStore,
    DedupeStore,
    FailureStore,
    InboxStore,
    LockStore,
    OrphanStore,
    QuestionStore,
    QueueStore,
    RateStore,
    ThreadStore,
)
from switchboard.agent_choice import AgentChoice
from switchboard.state import BusyMode

__all__ = ["ManagerConfig", "ManagerStores", "TurnRunner"]


class TurnRunner(Protocol):
    """What the manager needs from the agent runtime."""

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult: ...

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult: ...


@dataclass(frozen=True, slots=True)
class ManagerStores:
    """What the manager keeps in Redis (`storage/` implements each port)."""

    inbox: InboxStore
    dedupe: DedupeStore
    threads: ThreadStore
    locks: LockStore
    queue: QueueStore
    orphans: OrphanStore
    questions: QuestionStore
    rate: RateStore
    context: ContextStore | None = None  # conversation context (None: turns get none)
    feedback: VoteStore | None = None  # votes on answers (None: answers cannot be rated)
    failures: FailureStore | None = None  # failures by reference id, for the console
    admission: AdmissionStore | None = None  # dedupe + flood limit in one round trip (else two)


@dataclass(frozen=True, slots=True)
class ManagerConfig:
    busy: BusyMode = BusyMode.STEER  # what a message does while its conversation's turn runs
    collect_s: float = 1.5  # `collect`: how long a burst's first message waits for the rest
    model_name: str = "demo"
    agent: AgentChoice | None = None  # the default agent (SWITCHBOARD_AGENT…), for `/status`
    turn_timeout_s: float = 600.0
    max_input_chars: int = 32_000  # a pasted log or book would cost more than it could help
    typing_delay_s: float = 0.3  # below this an answer arrives before a typing hint would
    max_concurrent_turns: int = 64  # messages one worker handles at once; the rest wait
    max_deliveries: int = 5  # an entry handed out this often is answered with an error instead
    max_attempts: int = 5  # takes of one queued batch before it is answered with an error
    queue_max_age_s: float = 3600.0  # an older message is told so instead of answered (0: off)
    lock_ttl_s: float = 30.0  # the thread lock's TTL: closing steps retry at least this long
    retry_delays_s: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)  # storage errors, before reclaim
    sweep_every_s: float = 2.0  # how often orphaned queues and stalled entries are looked for
    streaming: bool = False  # show replies as they are written, where the adapter can
    stream_after_s: float = 1.0  # a reply written faster than this is sent without streaming
    max_streams: int = 16  # replies one worker streams at once; the rest are sent whole
    max_attachment_bytes: int = 10 * 1024 * 1024  # largest inbound file handed to the agent
    context_messages: int = 20  # earlier messages a turn may be shown (0: none)
    context_chars: int = 8000  # and their characters, newest kept first
    context_timeout_s: float = 10.0  # a history read taking longer is given up on
    observe_keep: int = 50  # messages recorded per Telegram group for context (0: none)
    command_prefix: str = "!"  # `!stop`: commands where a platform takes `/word` (Slack threads)
    slack_command: str = "/switchboard"  # the Slack slash command, as `/help` shows it
    feedback: bool = False  # answers carry 👍/👎 buttons, or a reaction on them is a vote
