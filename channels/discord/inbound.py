"""What comes in from Discord: message payloads (a mention gets its thread), button presses
(answers, votes, Stop), presses on components we never made, slash commands and the command
tree's errors, and the bindings' word on a message's place.

Conversations (the table in `channels/message.py`): a DM is one conversation; a guild-channel
message that mentions the bot gets a thread created from it *before* delivery, and the message
is delivered with that thread as its chat, so the key is `discord:<guild>:<thread>` and the reply
lands there. Later messages in a thread the bot owns (created in this process, or cached with
`owner_id` = the bot, which survives a restart) need no mention. If the thread cannot be made,
the reply goes to the channel, as a reply to the message. Thread creation is idempotent per
message (a replayed MESSAGE_CREATE after a RESUME gets the same thread: remembered here, or
recovered from Discord's "thread already created" error, since a thread started from a message
has that message's id), so the manager's dedupe on chat + message id sees the duplicate.

Slash commands come from the command registry through discord.py's `app_commands`
(`discord/commands.py`), registered by whoever holds the gateway when Discord's differ
(`discord/gateway.py`). An interaction is deferred at once (ephemeral when the registry says the
answer is private), then delivered like a message; whichever worker answers it uses the
follow-up webhook named by the application id and interaction token the message carries (valid
15 minutes), as presses do.

A mixin of `DiscordAdapter` over `GatewaySessions` (see there why): each handler runs in a task
the gateway's read gate counts, and reads the sessions' caches.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Final

import discord
import structlog
from discord import app_commands

from channels.adapter import deliver_until_taken
from channels.bindings import DEFAULT_POLICY, PlacePolicy, PolicyFor, Subject
from channels.commands import CommandSpec
from channels.discord.client import interaction_payload, routed_webhooks
from channels.discord.errors import THREAD_ALREADY_CREATED, translated
from channels.discord.events import (
    BotIdentity,
    command_to_inbound,
    is_for_bot,
    is_stop_custom_id,
    press_to_inbound,
    stop_to_inbound,
    strip_mention,
    thread_name,
    to_inbound,
    vote_to_inbound,
)
from channels.discord.gateway import GatewaySessions
from channels.message import Platform
from switchboard.errors import PlatformError

__all__ = ["REMEMBERED", "Inbound", "remember"]

REMEMBERED = 4096  # bound on each in-memory map (threads, message→thread, reactions' answers)

_NO_PINGS = discord.AllowedMentions.none()
_PLATFORM = str(Platform.DISCORD)
_THREAD_ARCHIVE_MIN: Final = 1440  # threads auto-archive after a day without messages
_PRESS_GONE = "That button is no longer active, so nothing was done."
_COMMAND_GONE = "That command is no longer available."
_COMMAND_FAILED = "Sorry, that command could not be run."
_STALE_COMMAND = (app_commands.CommandNotFound, app_commands.CommandSignatureMismatch)

_log = structlog.get_logger(__name__)


def remember(store: OrderedDict[str, Any], key: str, value: Any) -> None:
    """Set `key` as the newest entry, dropping the oldest past `REMEMBERED`."""
    store[key] = value
    store.move_to_end(key)
    while len(store) > REMEMBERED:
        store.popitem(last=False)


class Inbound(GatewaySessions):
    """The inbound half of `DiscordAdapter`: events to `InboundMessage`s, delivered."""

    _webhooks: Any
    _policy: PolicyFor | None
    _threads: OrderedDict[str, str]
    _thread_of: OrderedDict[str, asyncio.Task[str | None]]

    def _on_message_payload(self, payload: dict[str, Any]) -> None:
        if not self._stopped:
            self._take_in(self._handle_message(payload))

    def _on_press(self, interaction: discord.Interaction) -> None:
        if not self._stopped:
            self._take_in(self._handle_press(interaction_payload(interaction), interaction))

    def _on_foreign_press(self, interaction: discord.Interaction) -> None:
        """A press on a component we never made (an older build's, another app's message
        copied in) or a modal we never opened: told so, privately, instead of Discord's
        "This interaction failed"; nothing is delivered."""
        if not self._stopped:
            _log.info("discord.foreign_press", kind=interaction.type.name)
            self._spawn(self._answer_privately(interaction, _PRESS_GONE))

    def _place_policy(self, payload: dict[str, Any]) -> PlacePolicy:
        """The bindings' word on this message's place (the default without a bindings file)."""
        if self._policy is None:
            return DEFAULT_POLICY
        member = payload.get("member") or {}
        return self._policy(
            Subject(
                "discord",
                workspace=str(payload.get("guild_id") or ""),
                channel=str(payload["channel_id"]),
                parent=self._parent_of(str(payload["channel_id"])),
                user=str((payload.get("author") or {}).get("id") or ""),
                roles=tuple(str(r) for r in member.get("roles") or ()),
            )
        )

    def _parent_of(self, channel_id: str) -> str:
        """The channel a thread belongs to ("" for a channel that is no thread)."""
        known = self._threads.get(channel_id)
        if known:
            return known
        channel = self._channel(channel_id)
        parent = (
            getattr(channel, "parent_id", None) if isinstance(channel, discord.Thread) else None
        )
        return str(parent) if parent else ""

    def _is_bot_thread(self, channel_id: str) -> bool:
        if channel_id in self._threads:
            return True
        channel = self._channel(channel_id)
        user = self._client.user
        return (
            isinstance(channel, discord.Thread) and user is not None and channel.owner_id == user.id
        )

    async def _handle_message(self, payload: dict[str, Any]) -> None:
        me = self._me()
        channel_id = str(payload["channel_id"])
        structlog.contextvars.bind_contextvars(
            platform=_PLATFORM, chat_id=channel_id, event_id=str(payload.get("id"))
        )
        ours = self._is_bot_thread(channel_id)
        if not is_for_bot(payload, me, in_bot_thread=ours, policy=self._place_policy(payload)):
            _log.debug("message.skipped")
            return
        chat_id = None
        parent = self._parent_of(channel_id) if payload.get("guild_id") else ""
        if payload.get("guild_id") and not ours:
            if isinstance(self._channel(channel_id), discord.Thread):
                chat_id = channel_id  # a mention inside someone else's thread: answer there
            else:
                chat_id = await self._thread_for(payload, me)
                parent = channel_id
        msg = to_inbound(payload, me, chat_id=chat_id, parent_id=parent)
        _log.info("message.received", dm=msg.is_dm, thread=chat_id)
        # The gateway cannot be asked to resend: keep trying until the inbox takes it.
        await deliver_until_taken(self._deliver, msg, stopping=lambda: self._stopped)

    async def _thread_for(self, payload: dict[str, Any], me: BotIdentity) -> str | None:
        """The thread for this mention, created once per message however often it arrives."""
        message_id = str(payload["id"])
        task = self._thread_of.get(message_id)
        if task is None:  # a failure is remembered too, so a replay gets the same channel reply
            task = asyncio.ensure_future(self._create_thread(payload, me))
            remember(self._thread_of, message_id, task)
        return await asyncio.shield(task)

    async def _create_thread(self, payload: dict[str, Any], me: BotIdentity) -> str | None:
        channel_id, message_id = str(payload["channel_id"]), str(payload["id"])
        name = thread_name(strip_mention(payload.get("content") or "", me.id))
        try:
            async with translated("create thread"):
                data = await self._client.http.start_thread_with_message(
                    channel_id, message_id, name=name, auto_archive_duration=_THREAD_ARCHIVE_MIN
                )
            thread_id = str(data["id"])
        except PlatformError as exc:
            if exc.code != THREAD_ALREADY_CREATED:
                _log.warning("discord.thread_create_failed", code=exc.code)
                return None
            thread_id = message_id  # a thread started from a message shares its id
            _log.info("discord.thread_reused", thread=thread_id)
        else:
            _log.info("discord.thread_created", thread=thread_id)
        remember(self._threads, thread_id, channel_id)
        return thread_id

    async def _on_app_command(self, interaction: discord.Interaction, spec: CommandSpec) -> None:
        """discord.py's tree matched one of our commands: handle it in a tracked task."""
        if not self._stopped:
            self._take_in(self._handle_command(interaction_payload(interaction), interaction))

    async def _handle_command(
        self, payload: dict[str, Any], interaction: discord.Interaction
    ) -> None:
        """Defer at once (Discord allows 3 s; the defer is ephemeral when the answer will be),
        then hand the command to the inbox: the worker answers through the interaction token
        for up to 15 minutes. The gateway cannot resend an interaction, so the defer comes
        first and the hand-over is retried until it is taken."""
        msg = command_to_inbound(payload)
        if msg is None or msg.native is None:
            return
        structlog.contextvars.bind_contextvars(
            platform=_PLATFORM, chat_id=msg.chat_id, event_id=msg.provider_message_id
        )
        try:
            with routed_webhooks(self._webhooks):
                async with translated("acknowledge command"):
                    await interaction.response.defer(ephemeral=msg.native.private, thinking=True)
        except PlatformError as exc:
            _log.warning("discord.command_ack_failed", code=exc.code)
        _log.info("command.received", command=msg.native.name, private=msg.native.private)
        await deliver_until_taken(self._deliver, msg, stopping=lambda: self._stopped)

    async def _on_tree_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        """The command tree's error hook. A command we do not have, or whose shape Discord
        holds differently (a stale client list, another build's registration), is an
        everyday event: the person is told privately, with no traceback in the log. Anything
        else is our fault: logged with its traceback, and the person gets a short apology."""
        if isinstance(error, _STALE_COMMAND):
            name = error.name if isinstance(error, app_commands.CommandNotFound) else None
            _log.info("discord.command_unknown", command=name, reason=type(error).__name__)
            text = _COMMAND_GONE
        else:
            _log.error("discord.command_failed", error=type(error).__name__, exc_info=error)
            text = _COMMAND_FAILED
        await self._answer_privately(interaction, text)

    async def _answer_privately(self, interaction: discord.Interaction, text: str) -> None:
        """Answer an interaction we will not act on with an ephemeral message (a follow-up if it
        was answered already; an autocomplete gets no choices, all it may be answered with)."""
        try:
            with routed_webhooks(self._webhooks):
                async with translated("answer interaction"):
                    if interaction.type is discord.InteractionType.autocomplete:
                        await interaction.response.autocomplete([])
                    elif interaction.response.is_done():
                        await interaction.followup.send(
                            text, ephemeral=True, allowed_mentions=_NO_PINGS
                        )
                    else:
                        await interaction.response.send_message(
                            text, ephemeral=True, allowed_mentions=_NO_PINGS
                        )
        except PlatformError as exc:
            _log.warning("discord.interaction_answer_failed", code=exc.code)

    async def _handle_press(
        self, payload: dict[str, Any], interaction: discord.Interaction
    ) -> None:
        if is_stop_custom_id(str((payload.get("data") or {}).get("custom_id", ""))):
            await self._handle_stop(payload, interaction)
            return
        msg = press_to_inbound(payload) or vote_to_inbound(payload)
        if msg is None:
            return
        structlog.contextvars.bind_contextvars(
            platform=_PLATFORM, chat_id=msg.chat_id, event_id=str(payload.get("id"))
        )
        try:
            with routed_webhooks(self._webhooks):
                async with translated("acknowledge press"):
                    await interaction.response.defer()
        except PlatformError as exc:
            _log.warning("discord.press_ack_failed", code=exc.code)
        if msg.button is not None:
            _log.info("button.pressed", question_id=msg.button.question_id)
        else:
            _log.info("vote.pressed")
        await deliver_until_taken(self._deliver, msg, stopping=lambda: self._stopped)

    async def _handle_stop(self, payload: dict[str, Any], interaction: discord.Interaction) -> None:
        """The Stop button under a reply being written: the presser's `/stop` there, answered
        through the press. Whose answer it is comes from the manager's state, never from the
        button (a client sends any custom id it likes): the manager lets the asker or an admin
        through and tells anyone else, only them, that it is not theirs to stop."""
        msg = stop_to_inbound(payload)
        if msg is None:
            return
        structlog.contextvars.bind_contextvars(
            platform=_PLATFORM, chat_id=msg.chat_id, event_id=msg.provider_message_id
        )
        try:
            with routed_webhooks(self._webhooks):
                async with translated("acknowledge stop"):
                    await interaction.response.defer()
        except PlatformError as exc:
            _log.warning("discord.stop_ack_failed", code=exc.code)
        _log.info("stop.pressed")
        await deliver_until_taken(self._deliver, msg, stopping=lambda: self._stopped)
