"""The channel manager: adapters append to the inbox, workers take each entry through the gates
to its thread's turn, and the entry is finished once its message was answered or queued.

`deliver` is what adapters call: it returns once the message is durable in Redis, and raises
when it is not, so the adapter does not acknowledge the platform (which then redelivers).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import structlog

from channels import metrics
from channels.adapter import Adapter
from channels.manager.codec import CorruptPayload, decode_message, encode_message
from channels.manager.config import ManagerConfig, ManagerStores, TurnRunner
from channels.manager.context import MessageContext, Outcome, chat_route
from channels.manager.gates.access import AccessAndRate
from channels.manager.gates.budget import BudgetGate
from channels.manager.gates.chain import build_chain
from channels.manager.gates.command_gates import Commands, LinkAndHelp
from channels.manager.gates.commands import CommandDesk
from channels.manager.gates.dedupe import DedupeGate
from channels.manager.gates.feedback import FeedbackGate, OnVote
from channels.manager.gates.home import HomeGate
from channels.manager.gates.limits import InputLimits
from channels.manager.gates.observe import ObserveGate
from channels.manager.gates.sessions import SessionsGate
from channels.manager.gates.thread import Routing
from channels.manager.intake import Intake
from channels.manager.replies.questions import QuestionDesk
from channels.manager.replies.responder import Responder
from channels.manager.routing import ThreadResolver
from channels.manager.turns.retry import Step, run_idempotent
from channels.manager.turns.scheduler import TurnScheduler
from channels.message import InboundMessage, Platform
from switchboard.errors import AgentError, StorageError
from switchboard.state import Entry

if TYPE_CHECKING:
    from channels.access import AccessGate
    from channels.bindings import BindingResolver
    from channels.usage import UsageDesk

__all__ = ["Manager"]

_log = structlog.get_logger(__name__)

ExtraCommand = Callable[[MessageContext], Awaitable[str]]


class Manager:
    def __init__(
        self,
        *,
        runtime: TurnRunner,
        stores: ManagerStores,
        access: AccessGate | None = None,
        config: ManagerConfig | None = None,
        usage: UsageDesk | None = None,
        on_vote: OnVote | None = None,
        bindings: BindingResolver | None = None,
    ) -> None:
        self._s = stores
        self._config = config = config or ManagerConfig()
        self._adapters: dict[Platform, Adapter] = {}
        say = Responder(typing_delay_s=config.typing_delay_s, failures=stores.failures)
        self._say = say
        resolver = ThreadResolver(stores.threads)
        questions = QuestionDesk(stores.questions)
        self._turns = TurnScheduler(
            runtime=runtime,
            stores=stores,
            questions=questions,
            responder=say,
            config=config,
            background=self._background,
            usage=usage,
            bindings=bindings,
        )
        extra: dict[str, ExtraCommand] = {}
        if usage is not None:
            extra["usage"] = lambda ctx: usage.usage_text(ctx.msg)
        commands = CommandDesk(
            threads=stores.threads,
            locks=stores.locks,
            queue=stores.queue,
            resolver=resolver,
            responder=say,
            access=access,
            model_name=config.model_name,
            stop_local=self._turns.stop_local,
            modes=self._turns,
            extra=extra,
            tools=getattr(runtime, "tool_names", None),
            slack_command=config.slack_command,
            prefix=config.command_prefix,
            agent=config.agent,
            bindings=bindings,
        )
        self._intake = Intake(
            stores.inbox, stores.orphans, handle=self._handle, sweep=self._sweep, config=config
        )
        self._chain = build_chain(
            [
                ObserveGate(stores.context, access, keep=config.observe_keep),
                DedupeGate(stores.dedupe, stores.admission),
                HomeGate(
                    access,
                    usage,
                    slack_command=config.slack_command,
                    prefix=config.command_prefix,
                ),
                FeedbackGate(
                    stores.feedback if config.feedback else None, stores.threads, on_vote=on_vote
                ),
                *([SessionsGate(bindings)] if bindings is not None else []),
                AccessAndRate(
                    access, stores.rate, say, resolver=resolver, prefix=config.command_prefix
                ),
                LinkAndHelp(commands),
                Commands(commands),
                BudgetGate(usage, say),
                InputLimits(say, config.max_input_chars),
                Routing(resolver, questions, say, self._background),
            ],
            self._turns.submit,
        )

    # -- wiring ---------------------------------------------------------------------------

    def register(self, adapter: Adapter) -> None:
        self._adapters[adapter.platform] = adapter

    async def deliver(self, msg: InboundMessage) -> None:
        """Make the message durable in the inbox; raises StorageError if it could not be."""
        # its shard: a chat's messages stay in order
        entry_id = await self._s.inbox.append(encode_message(msg), route=chat_route(msg))
        metrics.MESSAGES_IN.labels(platform=str(msg.platform)).inc()
        _log.debug("message.accepted", entry=entry_id, platform=str(msg.platform))

    async def start(self) -> None:
        """Start working the inbox (the `worker` and `all` roles)."""
        await self._intake.start()

    async def idle(self, timeout: float = 30.0) -> None:
        """Until every message in the inbox was handled (tests, graceful shutdown)."""
        await self._intake.wait_idle(timeout)

    async def aclose(self, timeout: float = 10.0) -> None:
        await self._intake.stop(timeout)

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        """Side work (receipt reactions) that must not delay the turn; supervised."""
        self._intake.track(asyncio.create_task(coro, name="side"))

    # -- one entry --------------------------------------------------------------------------

    async def _handle(self, entry: Entry) -> Outcome:
        """One inbox entry through the gates; never raises."""
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(entry=entry.entry_id)
        try:
            msg = decode_message(entry.payload)
        except CorruptPayload as exc:
            _log.error("inbox.corrupt_entry", error=str(exc))
            return await self._finalize(None, entry, Outcome.DUPLICATE)
        structlog.contextvars.bind_contextvars(
            platform=str(msg.platform), chat_id=msg.chat_id, event_id=msg.provider_message_id
        )
        adapter = self._adapters.get(msg.platform)
        if adapter is None:  # another process serves this platform; it reclaims the entry
            _log.warning("message.not_served_here")
            return Outcome.NOT_MINE
        ctx = MessageContext(adapter, msg, entry.entry_id, entry.payload, entry.deliveries)
        ctx.turn_order = self._intake.order_for(entry.entry_id, chat_route(msg))
        if entry.deliveries > self._config.max_deliveries:
            _log.error("inbox.gave_up", deliveries=entry.deliveries)
            await self._say.report_on(adapter, msg, AgentError("message kept failing"))
            return await self._finalize(ctx, entry, Outcome.ANSWERED)
        try:
            outcome = await self._chain(ctx)
        except StorageError as exc:
            _log.warning("message.storage_failed", error=str(exc), deliveries=entry.deliveries)
            return Outcome.RETRY
        except Exception as exc:
            await self._say.report_on(adapter, msg, exc)
            outcome = Outcome.ANSWERED
        return await self._finalize(ctx, entry, outcome)

    async def _finalize(
        self, ctx: MessageContext | None, entry: Entry, outcome: Outcome
    ) -> Outcome:
        """Finish the entry (one of the two places an entry is finished; the other is a turn's
        `finish`, with its batch); an answered message is marked so, so a reclaimed copy of the
        entry is not answered again. Idempotent, so a storage blip is retried here."""
        if outcome in (Outcome.HANDED_OVER, Outcome.RETRY, Outcome.NOT_MINE):
            return outcome
        work: list[Step] = [lambda: self._s.inbox.finish([entry.entry_id])]
        if ctx is not None and outcome is Outcome.ANSWERED:
            msg = ctx.msg
            work.append(
                lambda: self._s.dedupe.finish(
                    str(msg.platform), list(msg.dedupe_ids), scope=msg.chat_id, owner=entry.entry_id
                )
            )
        try:
            await run_idempotent(work, self._config.retry_delays_s)
        except StorageError as exc:
            _log.warning("inbox.finish_failed", error=str(exc))
        return outcome

    async def _sweep(self, thread_id: str, seen: float) -> None:
        structlog.contextvars.clear_contextvars()
        await self._turns.sweep(thread_id, seen, self._adapters)
