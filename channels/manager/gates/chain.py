"""The gates a message passes before it reaches its thread, as a middleware chain.

Each gate has the shape of aiogram's and slack-bolt's middleware, `async (ctx, call_next)`: it
returns an `Outcome` itself (the message stops here) or hands on to `call_next`. Order:
dedupe → flood limit + access → link and help → commands → budget → input limits → thread →
(the turn).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from channels import metrics
from channels.adapter import HOME_REQUEST, UNSUPPORTED_TEXT, AckKind
from channels.commands import DEFAULT_PREFIX, CommandForm, parse_command
from channels.manager.context import MessageContext, Next, Outcome
from channels.manager.gates.commands import PRE_ACCESS, CommandDesk
from channels.manager.ports import AdmissionStore, DedupeStore, RateStore
from channels.manager.replies.questions import QuestionDesk
from channels.manager.replies.responder import Responder
from channels.manager.routing import ThreadResolver, creates_conversation
from channels.message import InboundMessage, Platform
from switchboard.state import Claim, RateDecision

if TYPE_CHECKING:
    from channels.access import AccessGate
    from channels.usage import UsageDesk

__all__ = [
    "AccessAndRate",
    "BudgetGate",
    "Commands",
    "DedupeGate",
    "Gate",
    "InputLimits",
    "LinkAndHelp",
    "Routing",
    "build_chain",
]

_log = structlog.get_logger(__name__)

RATE_TEXT = "You're sending messages too fast; I'll skip some. Try again in a minute."


class Gate(Protocol):
    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome: ...


def build_chain(gates: Sequence[Gate], endpoint: Next) -> Next:
    handler = endpoint
    for gate in reversed(gates):
        handler = functools.partial(gate, call_next=handler)
    return handler


def rate_limited(msg: InboundMessage) -> bool:
    """Whether the sender's flood limit counts this message: every typed one, commands too."""
    return msg.platform is not Platform.CONSOLE and msg.button is None


class DedupeGate:
    """Platform retries and twin events (Slack's message + app_mention) get one answer.

    With an `admission` store, a message the flood limit will count (`AccessAndRate`) is
    claimed and counted in one round trip; a duplicate is not counted twice (the limit counts
    a message by its own id), and the verdict waits in `ctx.rate`. Votes and Home requests,
    which leave the chain before the flood limit, are only claimed.

    A DM's thread is read in that round trip too (`ctx.thread_hint`, for `Routing`) when its
    conversation was started (only `Routing` starts one, so a command never does), and only
    while no earlier message of its chat is still on its way here: a `/new` among those could
    point the conversation at a new thread after this read."""

    def __init__(self, dedupe: DedupeStore, admission: AdmissionStore | None = None) -> None:
        self._dedupe = dedupe
        self._admission = admission

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        ids = list(msg.dedupe_ids)
        home = msg.native is not None and msg.native.name == HOME_REQUEST
        if self._admission is not None and rate_limited(msg) and msg.vote is None and not home:
            first = ctx.turn_order is None or ctx.turn_order.first
            admitted = await self._admission.admit(
                str(msg.platform),
                ids,
                scope=msg.chat_id,
                owner=ctx.entry_id,
                sender_id=msg.sender_id,
                message_id=ids[0],
                conversation=ctx.conversation if msg.is_dm and first else None,
            )
            claim, ctx.rate, ctx.thread_hint = admitted.claim, admitted.rate, admitted.thread_id
        else:
            claim = await self._dedupe.claim(
                str(msg.platform), ids, scope=msg.chat_id, owner=ctx.entry_id
            )
        if claim is Claim.DUPLICATE:
            metrics.DEDUPE_HITS.labels(platform=str(msg.platform)).inc()
            _log.info("message.deduped")
            return Outcome.DUPLICATE
        if claim is Claim.DONE:
            _log.info("message.already_answered")
            return Outcome.DUPLICATE
        return await call_next(ctx)


class LinkAndHelp:
    """`/help`, `/link`, `/unlink` work without access: they are how access is gained (the
    flood limit before them still applies)."""

    def __init__(self, commands: CommandDesk) -> None:
        self._commands = commands

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        if ctx.command is not None and ctx.command.name in PRE_ACCESS:
            await self._commands.pre_access(ctx, ctx.command)
            return Outcome.ANSWERED
        return await call_next(ctx)


class AccessAndRate:
    """The per-sender flood limit (for every typed message, commands included) and linked
    access (for all but the commands that grant it), read in one round trip of wall time.
    Commands are recognised here; `!stop` or `@bot stop` unaddressed (a thread reply on Slack)
    is a command only in a conversation of ours, or a stranger's thread would get answers."""

    def __init__(
        self,
        access: AccessGate | None,
        rate: RateStore,
        responder: Responder,
        *,
        resolver: ThreadResolver | None = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self._access = access
        self._rate = rate
        self._say = responder
        self._resolver = resolver
        self._prefix = prefix

    async def _parse(self, ctx: MessageContext) -> None:
        msg = ctx.msg
        command = parse_command(msg.text, prefix=self._prefix, addressed=msg.mentions_bot)
        if (
            command is not None
            and command.form is not CommandForm.SLASH
            and msg.native is None
            and not creates_conversation(msg)
            and self._resolver is not None
            and await self._resolver.thread_for(msg, ctx.conversation, create=False) is None
        ):
            command = None
        ctx.command = command

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        if msg.button is None:
            await self._parse(ctx)
        grants_access = ctx.command is not None and ctx.command.name in PRE_ACCESS
        if ctx.rate is not None:  # counted with the dedupe claim
            counted: Awaitable[RateDecision] = _decided(ctx.rate)
        elif rate_limited(msg):
            counted = self._rate.hit(str(msg.platform), msg.sender_id, msg.dedupe_ids[0])
        else:
            counted = _decided(RateDecision.ALLOW)
        decision, allowed = await asyncio.gather(
            counted, _granted() if grants_access else self._allowed(ctx)
        )
        if decision is not RateDecision.ALLOW:
            _log.info("message.rate_limited", decision=str(decision))
            if decision is RateDecision.NOTIFY or msg.native is not None:  # a command waits
                await self._say.refuse(ctx.adapter, msg, RATE_TEXT)
            return Outcome.ANSWERED
        if not allowed:
            return Outcome.ANSWERED
        return await call_next(ctx)

    async def _allowed(self, ctx: MessageContext) -> bool:
        if self._access is None:
            return True
        decision = await self._access.check(ctx.msg)
        if decision.allowed:
            return True
        _log.info("message.denied", notice=decision.notice is not None)
        if decision.notice:
            await ctx.adapter.notify(ctx.msg, decision.notice)
        return False


class Commands:
    def __init__(self, commands: CommandDesk) -> None:
        self._commands = commands

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        if ctx.command is None:
            return await call_next(ctx)
        await self._commands.run(ctx, ctx.command)
        return Outcome.ANSWERED


class BudgetGate:
    """A sender over their daily or weekly model budget gets the reset time, not a turn."""

    def __init__(self, usage: UsageDesk | None, responder: Responder) -> None:
        self._usage = usage
        self._say = responder

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        adapter = ctx.adapter

        async def refuse(msg: InboundMessage, text: str) -> None:
            await self._say.refuse(adapter, msg, text)

        if self._usage is not None and not await self._usage.admit(ctx.msg, refuse):
            return Outcome.ANSWERED
        return await call_next(ctx)


class InputLimits:
    """Text or files (a message of stickers alone is not readable), and no more text than the
    agent should be handed in one message."""

    def __init__(self, responder: Responder, max_chars: int) -> None:
        self._say = responder
        self._max = max_chars

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        readable = any(a.kind != "sticker" for a in msg.attachments)
        if msg.button is None and not msg.text.strip() and not readable:
            await self._say.refuse(ctx.adapter, msg, UNSUPPORTED_TEXT)
            return Outcome.ANSWERED
        if len(msg.text) > self._max:
            _log.info("message.too_long", chars=len(msg.text))
            await self._say.refuse(
                ctx.adapter,
                msg,
                f"That message is too long for me ({len(msg.text):,} characters; the limit is "
                f"{self._max:,}). Please shorten it or send it in parts.",
            )
            return Outcome.ANSWERED
        return await call_next(ctx)


class Routing:
    """The message's thread: from the question a press answers, else the conversation table
    (read after the chat's earlier messages, so a `/new` among them counts). A text message
    that will be answered gets its receipt (👀) here, beside the turn."""

    def __init__(
        self,
        resolver: ThreadResolver,
        questions: QuestionDesk,
        responder: Responder,
        background: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self._resolver = resolver
        self._questions = questions
        self._say = responder
        self._background = background

    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome:
        msg = ctx.msg
        if msg.button is not None:
            ctx.thread_id = await self._questions.check_press(ctx.adapter, msg)
        elif ctx.thread_hint is not None:
            ctx.thread_id = ctx.thread_hint
        else:
            if ctx.turn_order is not None:  # a `/new` just before this message comes first
                await ctx.turn_order.wait_turn()
            ctx.thread_id = await self._resolver.thread_for(
                msg, ctx.conversation, create=creates_conversation(msg)
            )
        if ctx.thread_id is None:
            if msg.button is None:
                _log.info("message.ignored", reason="not_addressed")
            return Outcome.ANSWERED
        structlog.contextvars.bind_contextvars(thread_id=ctx.thread_id)
        if msg.button is None:
            self._background(self._say.acknowledge(ctx.adapter, msg, AckKind.RECEIVED))
        return await call_next(ctx)


async def _decided(decision: RateDecision) -> RateDecision:
    return decision


async def _granted() -> bool:
    return True
