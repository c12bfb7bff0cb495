"""Chat commands: `/help`, `/link`, `/unlink` (before access checks), `/new`, `/stop`, `/queue`,
`/status`.

A native command (`InboundMessage.native`) is answered through the platform's own channel for it
(`adapter.notify`: Discord's follow-up, Slack's response_url), private where the registry says so;
text commands keep answering in the conversation, `/link` and `/unlink` privately. A private
answer that cannot reach its sender is shown to nobody (the adapter tells the conversation only
that it could not), and the `/link` token it carried is revoked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import structlog

from channels.bindings import BindingResolver
from channels.commands import (
    DEFAULT_PREFIX,
    DEFAULT_SLACK_COMMAND,
    Command,
    CommandName,
    CommandSpec,
    command_spec,
    help_text,
    syntax_for,
)
from channels.manager.context import MessageContext
from channels.manager.gates.askers import Asker, asker_of, may_act
from channels.manager.ports import LockStore, QueueStore, ThreadStore
from channels.manager.replies.responder import Responder
from channels.manager.routing import ThreadResolver
from switchboard.agent_choice import AgentChoice
from switchboard.state import BusyMode

if TYPE_CHECKING:
    from channels.access import AccessGate

__all__ = ["PRE_ACCESS", "CommandDesk", "StopLocal"]

_log = structlog.get_logger(__name__)

PRE_ACCESS = frozenset({CommandName.LINK, CommandName.UNLINK, CommandName.HELP})
"""Commands a stranger may use: they are how a chat gets access in the first place."""

_ASKERS_ONLY = frozenset({CommandName.STOP, CommandName.NEW, CommandName.QUEUE})
"""Commands that act on a running answer: held to the asker-or-admin rule outside a DM."""

_AGENT_SETTINGS = frozenset({"agent", "assistant", "model", "system_prompt"})
StopLocal = Callable[[str], bool]
"""Cancel a turn of this thread running in this process; True if one was running."""


class BusyModes(Protocol):
    """How the turn scheduler serves busy modes (`TurnScheduler`)."""

    @property
    def default_mode(self) -> BusyMode: ...

    def mode_for(self, stored: BusyMode | None, default: BusyMode | None = None) -> BusyMode: ...


_MODE_TEXT = {
    BusyMode.STEER: "a message you send while I answer joins the answer I'm writing",
    BusyMode.COLLECT: "messages sent close together become one question, and are answered together",
    BusyMode.INTERRUPT: "a message you send while I answer cancels that answer; I answer it "
    "together with the one before",
    BusyMode.QUEUE: "a message you send while I answer is answered right after",
    BusyMode.REJECT: "a message you send while I answer is refused; send it again afterwards",
}


class CommandDesk:
    def __init__(
        self,
        *,
        threads: ThreadStore,
        locks: LockStore,
        queue: QueueStore,
        resolver: ThreadResolver,
        responder: Responder,
        access: AccessGate | None,
        model_name: str,
        stop_local: StopLocal,
        modes: BusyModes,
        extra: dict[str, Callable[[MessageContext], Awaitable[str]]] | None = None,
        tools: Callable[[], Sequence[str]] | None = None,
        slack_command: str = DEFAULT_SLACK_COMMAND,
        prefix: str = DEFAULT_PREFIX,
        agent: AgentChoice | None = None,
        bindings: BindingResolver | None = None,
    ) -> None:
        self._agent = (agent or AgentChoice()).over(AgentChoice("builtin", "agent", model_name))
        self._bindings = bindings
        self._slack_command = slack_command
        self._prefix = prefix
        self._tools = tools
        self._threads = threads
        self._locks = locks
        self._queue = queue
        self._resolver = resolver
        self._say = responder
        self._access = access
        self._model = model_name
        self._stop_local = stop_local
        self._modes = modes
        self._extra = extra or {}

    async def pre_access(self, ctx: MessageContext, command: Command) -> None:
        msg, adapter = ctx.msg, ctx.adapter
        if command.name is CommandName.HELP:
            await self._answer(ctx, command, self._help(ctx))
            return
        if self._access is None:
            await adapter.notify(msg, "Linking is not enabled on this Switchboard.", private=True)
            return
        if command.name is CommandName.UNLINK:
            await adapter.notify(msg, await self._access.unlink(msg), private=True)
            return
        is_admin = msg.is_dm or await adapter.is_workspace_admin(msg)
        reply = await self._access.link(msg, is_admin=is_admin)
        if not await adapter.notify(msg, reply.text, private=True):
            await self._access.withdraw(reply)  # never shown: nobody may use it

    async def run(self, ctx: MessageContext, command: Command) -> None:
        _log.info("command.received", command=str(command.name), native=ctx.msg.native is not None)
        spec = command_spec(command.name)
        misplaced = self._misplaced(ctx, spec)
        if misplaced is not None:
            await ctx.adapter.notify(ctx.msg, misplaced, private=True)
            return
        if command.name in _ASKERS_ONLY and not ctx.msg.is_dm:
            refused = await self._held(ctx, command)
            if refused is not None:
                _log.info("command.refused_not_asker", command=str(command.name))
                await self._say.refuse(ctx.adapter, ctx.msg, refused)
                return
        if command.name is CommandName.NEW:
            thread_id = await self._threads.start_new(ctx.conversation)
            text = "Started a new conversation. Earlier messages here are forgotten."
            _log.info("thread.reset", thread_id=thread_id)
        elif command.name is CommandName.STOP:
            text = await self._stop(ctx)
        elif command.name is CommandName.QUEUE:
            text = await self._queue_mode(ctx, command.args)
        elif command.name is CommandName.STATUS:
            text = await self._status(ctx)
        elif str(command.name) in self._extra:
            text = await self._extra[str(command.name)](ctx)
        else:
            word = command.raw.split()[0] if command.raw.split() else command.raw
            text = f"Unknown command {word!r}.\n\n{self._help(ctx)}"
        await self._answer(ctx, command, text)

    async def _held(self, ctx: MessageContext, command: Command) -> str | None:
        """The asker-or-admin rule for a command acting on someone's run in a shared place: None
        when the sender may (nobody's run, theirs, or they are an admin), else why not. The
        asker is the running batch's first sender, else the open question's asker; `/queue`
        without a mode only shows, so anyone may."""
        if command.name is CommandName.QUEUE and not command.args.strip():
            return None
        thread_id = await self._resolver.thread_for(ctx.msg, ctx.conversation, create=False)
        if thread_id is None:
            return None
        asker = asker_of(await self._queue.running(thread_id))
        if asker is None and command.name is not CommandName.STOP:
            question = (await self._queue.state(thread_id)).question
            if question is not None:
                asker = Asker(question.asker_id, "the person I asked")
        if await may_act(ctx.adapter, ctx.msg, asker.sender_id if asker else None):
            return None
        assert asker is not None
        return f"Only {asker.name} or an admin can do that here right now."

    def _help(self, ctx: MessageContext) -> str:
        platform = ctx.msg.platform
        return help_text(
            syntax_for(platform, slack_command=self._slack_command, prefix=self._prefix)
        )

    async def _answer(self, ctx: MessageContext, command: Command, text: str) -> None:
        """A native command is answered where the platform expects it (its interaction, its
        response_url), privately as the registry says; a typed one in the conversation."""
        msg = ctx.msg
        if msg.native is not None:
            spec = command_spec(command.name)
            private = spec.private if spec is not None else True
            await ctx.adapter.notify(msg, text, private=private)
            return
        await self._say.send_text(ctx.adapter, msg.target, text)

    def _misplaced(self, ctx: MessageContext, spec: CommandSpec | None) -> str | None:
        """Why a native command cannot act where it was used, or None: a Slack slash command
        outside a DM (Slack sends none from threads, where its conversations are). Elsewhere a
        command acts on the place it was used in (a Discord channel the bot answered in is a
        conversation too)."""
        native = ctx.msg.native
        if native is None or spec is None or native.place in ("", *spec.places):
            return None
        syntax = syntax_for(
            ctx.msg.platform, slack_command=self._slack_command, prefix=self._prefix
        )
        if syntax.slash_in_threads:
            return None
        _log.info("command.misplaced", command=str(spec.name), place=native.place)
        return (
            f"{syntax.show(spec.name)} acts on one conversation: use it in a DM with me, or type "
            f"{syntax.prefix}{spec.name} inside the conversation's thread."
        )

    async def _stop(self, ctx: MessageContext) -> str:
        thread_id = await self._resolver.thread_for(ctx.msg, ctx.conversation, create=False)
        stopped = False
        if thread_id is not None:
            stopped = await self._locks.request_stop(thread_id)
            stopped = self._stop_local(thread_id) or stopped
        return "Stopping the current answer." if stopped else "Nothing is running here."

    async def _queue_mode(self, ctx: MessageContext, args: str) -> str:
        """`/queue` shows the conversation's busy mode, `/queue MODE` sets it (`default`: back
        to the operator's)."""
        word = args.strip().lower()
        choices = ", ".join([*BusyMode, "default"])
        if word and word != "default" and word not in BusyMode.__members__.values():
            return f"Unknown mode {word!r}. Choose one of: {choices}."
        create = bool(word)
        thread_id = await self._resolver.thread_for(ctx.msg, ctx.conversation, create=create)
        if not word:
            stored = (await self._queue.state(thread_id)).mode if thread_id else None
            line = self._mode_line(stored, await self._bound_busy(ctx))
            return f"{line}\nChange it with /queue MODE ({choices})."
        assert thread_id is not None
        stored = None if word == "default" else BusyMode(word)
        await self._queue.set_mode(thread_id, stored)
        _log.info("thread.busy_mode_set", thread_id=thread_id, mode=word)
        return self._mode_line(stored, await self._bound_busy(ctx))

    async def _bound_busy(self, ctx: MessageContext) -> BusyMode | None:
        """The busy mode a binding gives this place, if any."""
        if self._bindings is None:
            return None
        return (await self._bindings.effective(ctx.msg)).busy

    def _mode_line(self, stored: BusyMode | None, bound: BusyMode | None = None) -> str:
        requested = stored or bound or self._modes.default_mode
        mode = self._modes.mode_for(stored, bound)
        origin = "set here" if stored else "this place's binding" if bound else "the default"
        line = f"Busy mode: {requested} ({origin}): {_MODE_TEXT[mode]}."
        if requested is not mode:
            line += " This agent cannot take messages mid-answer, so steer works as queue here."
        return line

    async def _status(self, ctx: MessageContext) -> str:
        thread_id = await self._resolver.thread_for(ctx.msg, ctx.conversation, create=False)
        if thread_id is None:
            return "\n".join(["No conversation yet here.", *await self._agent_lines(ctx)])
        state = await self._queue.state(thread_id)
        lines = [
            f"Thread: {thread_id[:8]}",
            f"Busy: {'yes' if state.busy else 'no'}",
            f"Queued messages: {max(0, state.unanswered - (1 if state.busy else 0))}",
            f"Waiting for an answer: {'yes' if state.question else 'no'}",
            self._mode_line(state.mode, await self._bound_busy(ctx)),
            *await self._agent_lines(ctx),
        ]
        if self._tools is not None:
            lines.append(f"Tools: {', '.join(self._tools()) or 'none'}")
        return "\n".join(lines)

    async def _agent_lines(self, ctx: MessageContext) -> list[str]:
        """The agent and model that answer here: the defaults, or what a binding chose."""
        bound = await self._bindings.effective(ctx.msg) if self._bindings is not None else None
        choice = self._agent if bound is None else (bound.agent or AgentChoice()).over(self._agent)
        builtin = choice.agent.lower() == "builtin"
        lines = [
            f"Agent: {choice.describe() if not builtin else 'builtin'}",
            f"Model: {choice.model if builtin else 'chosen by the agent'}",
        ]
        rules = sorted(
            {
                r.position
                for k, r in (bound.sources.items() if bound else ())
                if k in _AGENT_SETTINGS
            }
        )
        if rules:
            lines.append(f"Binding: rule {', '.join(map(str, rules))} of the bindings file")
        return lines
