"""What one agent turn takes and gives back: plain data at the agent/channels boundary."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from switchboard.agent_choice import AgentChoice
from switchboard.conversation import ContextMessage

__all__ = ["FileData", "ModelCall", "Question", "TurnContext", "TurnResult", "TurnUsage"]


TextSink = Callable[[str], Awaitable[None]]
SteerSource = Callable[[], Awaitable[Sequence[str]]]
"""Messages that arrived for the conversation while its turn runs (`agent.steer`)."""


@dataclass(frozen=True, slots=True)
class FileData:
    """A file's bytes crossing the agent/channels boundary: one the user sent (fetched by the
    manager, `TurnContext.files`) or one the agent made (`TurnResult.files`). `mime` is a claim;
    `agent.attachments` sniffs the bytes before trusting it."""

    name: str
    mime: str
    data: bytes = field(repr=False)
    transcript: str | None = None  # what a voice note or audio file says (`agent.transcription`)
    note: str = ""  # why it reaches the model only by name (e.g. too long to transcribe)


@dataclass(frozen=True, slots=True)
class TurnContext:
    """Who is talking and from where; becomes run metadata (tracing) and tool context."""

    user_id: str
    user_name: str = ""
    platform: str = ""
    conversation_key: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    fence: str = ""  # the thread-lock token; checkpoints are written only while it holds
    on_text: TextSink | None = field(default=None, compare=False, repr=False)
    """Streaming: called with each piece of assistant text as the model writes it."""
    on_status: TextSink | None = field(default=None, compare=False, repr=False)
    """Streaming: called with a short status when the agent starts a tool step."""
    files: tuple[FileData, ...] = field(default=(), repr=False)
    """The files that came with this turn's messages (already fetched, within the size limit);
    they reach the model as content blocks beside the text (`agent.attachments`)."""
    context_messages: tuple[ContextMessage, ...] = field(default=(), repr=False)
    """Earlier messages of the conversation (before the bot was addressed, or since it last
    spoke), oldest first; a new turn shows them to the model as one quoted block before the
    user's message (`agent.quoted`), never as instructions."""
    steer: SteerSource | None = field(default=None, compare=False, repr=False)
    """Steering: asked before each model call for messages the user sent meanwhile; they join
    the run as user messages (`agent.steer`)."""
    agent: AgentChoice | None = None
    """The agent a binding chose for this conversation (`agent.backends.registry`); None: the
    default one."""


@dataclass(frozen=True, slots=True)
class Question:
    """A clarification the agent is waiting on (an `ask_clarification` interrupt)."""

    text: str  # formatted: icon by type, context, question, numbered options
    question: str  # the bare question
    options: tuple[str, ...] = ()
    clarification_type: str = ""
    context: str = ""


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call: which model, its tokens, and its cost when known (None = unknown)."""

    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_micros: int | None = None
    provider_cost: bool = False  # the figure came from the provider, not from our price


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """Every model call of one turn, in order."""

    calls: tuple[ModelCall, ...] = ()

    @property
    def input_tokens(self) -> int:
        return sum(c.input_tokens for c in self.calls)

    @property
    def output_tokens(self) -> int:
        return sum(c.output_tokens for c in self.calls)

    @property
    def cost_micros(self) -> int | None:
        """The sum of the calls whose cost is known; None when no call's cost is."""
        known = [c.cost_micros for c in self.calls if c.cost_micros is not None]
        return sum(known) if known else None

    def cost_by_model(self) -> dict[str, int]:
        """Microdollars per model name (calls of unknown cost left out), for metrics."""
        out: dict[str, int] = {}
        for call in self.calls:
            if call.cost_micros is not None:
                out[call.model] = out.get(call.model, 0) + call.cost_micros
        return out


@dataclass(frozen=True, slots=True)
class TurnResult:
    reply_text: str  # clean assistant text of this turn only ("" when there is none)
    run_id: str
    question: Question | None = None
    usage: TurnUsage = field(default_factory=TurnUsage)  # every model call of this run
    files: tuple[FileData, ...] = field(default=(), repr=False)  # sent after the reply, natively
