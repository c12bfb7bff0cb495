"""The Discord adapter (discord.py 2): gateway in, `InboundMessage`s out, rendered chunks back.

`DiscordAdapter` is the facade the rest of the code uses, built from parts named for where a
change belongs:

- `channels/discord/gateway.py`: the gateway sessions (the adapter's client, one per shard),
  opened, restarted and closed; the read gate and the events waiting for the inbox;
- `channels/discord/inbound.py`: messages, presses, slash commands, threads for mentions;
- `channels/discord/reactions.py`: 👍/👎 reactions as votes;
- this module: what goes out (sends, questions, streams, edits, acknowledgements, typing,
  notices, files and history reads through `files.py` and `history.py`).

The parts are mixins of this class, not objects it owns: they share most of its state (the
client every part reads and sends through, the stop flag, the read gate and the tracked tasks,
the threads inbound made and outbound must not quote), which composition would hand to each.

Every send and edit carries `AllowedMentions.none()` (the client default too): the model's text
never pings. Every send, edit, streamed update and notice first waits on the channel's and the
bot's send budget (`discord/pacing.py`: this process's, or the fleet's in Redis when the service
passes a shared `pacer`); discord.py still waits out a 429 that happens anyway. Discord
exceptions become `switchboard.errors` at this boundary (`channels/discord/errors.py`); the token
is never logged. How the client hooks discord.py (public events, endpoint overrides, the read
gate, the raw message tap) lives in `channels/discord/client.py`, the pure payload decisions in
`channels/discord/events.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import discord
import structlog

from channels.adapter import (
    AckKind,
    Capabilities,
    Chunk,
    Deliver,
    ExclusiveReceiver,
    HistoryRequest,
    Markup,
    QuestionPrompt,
    ReplyStream,
    SentRef,
    private_undelivered_text,
)
from channels.bindings import PolicyFor
from channels.discord.client import DEFAULT_API_BASE, routed_webhooks, webhooks_for
from channels.discord.errors import translated
from channels.discord.events import (
    BotIdentity,
    is_for_bot,
    press_to_inbound,
    question_custom_id,
    stop_custom_id,
    to_inbound,
    vote_custom_id,
)
from channels.discord.files import MAX_UPLOAD_BYTES, DiscordFiles
from channels.discord.gateway import INTENTS, MAX_WAITING, VOTE_INTENTS, DiscordShard, _Gateway
from channels.discord.history import DiscordHistory
from channels.discord.inbound import Inbound
from channels.discord.pacing import SEND_LIMITS, DiscordLimits, DiscordPacing
from channels.discord.reactions import Reactions
from channels.message import Attachment, InboundMessage, Platform, ReplyTarget
from channels.names import Names
from channels.send_budget import LocalPacer, Pacer
from channels.streaming import EditStream, MessageOps
from switchboard.conversation import ContextMessage
from switchboard.errors import PlatformError

__all__ = [
    "EDIT_INTERVAL_S",
    "INTENTS",
    "LIMITS",
    "MAX_WAITING",
    "VOTE_INTENTS",
    "BotIdentity",
    "DiscordAdapter",
    "DiscordShard",
    "is_for_bot",
    "press_to_inbound",
    "to_inbound",
]

LIMITS = Capabilities(
    max_len=2000,
    len_unit="chars",
    markup=Markup.DISCORD_MARKDOWN,
    can_edit=True,
    buttons=True,
    reactions=True,
    votes="buttons",
)

EDIT_INTERVAL_S = 1.2  # Discord allows 5 edits per 5 s in a channel; keep under it

_NO_PINGS = discord.AllowedMentions.none()
_PLATFORM = str(Platform.DISCORD)
_BUTTON_LABEL_MAX = 80
_MAX_BUTTONS = 25
_READ_TIMEOUT_S = 8.0  # a context read taking longer is given up on; the turn goes on
_ACK_EMOJI = {AckKind.QUEUED: "⏳", AckKind.RECEIVED: "👀", AckKind.STEERED: "✍️"}
_ACK_NOTICE = "⏳ Got it, I'll answer this after the current reply."

_log = structlog.get_logger(__name__)


def _followup_handle(msg: InboundMessage) -> tuple[str, str] | None:
    """(application id, interaction token) of the interaction this message answers, if any."""
    if msg.native is not None and msg.native.token:
        return msg.native.application_id, msg.native.token
    handle = msg.handle
    if msg.button is not None and handle is not None and handle.token and handle.application_id:
        return handle.application_id, handle.token
    return None


def _buttons(chunk: Chunk) -> discord.ui.View | None:
    """👍/👎 under an answer that can be rated (`chunk.vote_run`), Stop under a reply being
    written (`chunk.stop_for`); None for any other message, which also takes an edited
    message's buttons away."""
    if chunk.stop_for:
        stop = discord.ui.View(timeout=None)
        stop.add_item(
            discord.ui.Button(
                label="Stop",
                emoji="⏹️",
                custom_id=stop_custom_id(),
                style=discord.ButtonStyle.danger,
            )
        )
        stop.stop()
        return stop
    if not chunk.vote_run:
        return None
    view = discord.ui.View(timeout=None)
    for value, emoji in (("up", "👍"), ("down", "👎")):
        view.add_item(
            discord.ui.Button(
                emoji=emoji,
                custom_id=vote_custom_id(value, chunk.vote_run),
                style=discord.ButtonStyle.secondary,
            )
        )
    view.stop()  # presses are decoded from the custom id, so discord.py need not store it
    return view


class DiscordAdapter(Inbound, Reactions):
    """Satisfies `channels.base.Adapter` for Discord.

    `guild_ready_timeout` is how long discord.py waits for the GUILD_CREATE stream to end before
    READY (its default, 2 s; tests shorten it); `start()` waits for READY at most `start_timeout`.
    Sends wait on `pacer` (default: this process's windows) for the budgets `send_limits` sets.
    With `shards` > 1 the adapter's own client only sends, and each shard this process receives
    (`shards`, one lease each in the service) runs its own `discord.Client(shard_id, shard_count)`:
    a session per shard starts and stops on its own as its lease comes and goes, which
    `AutoShardedClient` (shards fixed at connect) does not offer.
    At most about `max_waiting` events wait for the inbox at once (`_take_in`): past that the
    gateway is paused, and discord.py resumes it once they are taken. `heartbeat_timeout` is
    discord.py's bound on one gateway read (60 s; tests shorten it).
    """

    platform = Platform.DISCORD
    capabilities = LIMITS

    def __init__(
        self,
        *,
        token: str,
        deliver: Deliver,
        api_base: str = DEFAULT_API_BASE,
        gateway_url: str | None = None,
        guild_ready_timeout: float = 2.0,
        start_timeout: float = 60.0,
        pacer: Pacer | None = None,
        send_limits: DiscordLimits = SEND_LIMITS,
        shards: int = 1,
        max_waiting: int = MAX_WAITING,
        heartbeat_timeout: float = 60.0,
        read_timeout_s: float = _READ_TIMEOUT_S,
        command_guilds: Sequence[int] = (),
        policy: PolicyFor | None = None,
        votes: bool = False,
    ) -> None:
        if shards < 1:
            raise ValueError("shards must be at least 1")
        self._max_waiting = max_waiting
        self._votes = votes  # a 👍/👎 reaction on an answer is a vote: the reactions intents
        self._answers: OrderedDict[str, str] = OrderedDict()  # reacted message → run ("": not ours)
        self._reacting: dict[tuple[str, str], asyncio.Task[None]] = {}  # (message, user) → last
        self._heartbeat_timeout = heartbeat_timeout
        self._waiting = 0  # inbound events read and not yet taken (or given up)
        self._read_gate = asyncio.Event()  # cleared: no gateway session reads (client.py)
        self._read_gate.set()
        self._token = token
        self._pacing = DiscordPacing(pacer or LocalPacer(), send_limits)
        self._deliver = deliver
        self._api_base = api_base
        self._gateway_url = gateway_url
        self._guild_ready_timeout = guild_ready_timeout
        self._start_timeout = start_timeout
        self._shard_count = shards
        self._ready = asyncio.Event()
        self._logged_in = False  # HTTP only: a worker's (or a standby's) adapter
        self._webhooks = webhooks_for(api_base)  # None: discord.py's own
        self._command_guilds = tuple(command_guilds)
        self._client = self._new_client(self._ready, None)
        self._main = _Gateway(client=self._client, ready=self._ready)
        self._sessions: dict[int, _Gateway] = {}  # shard id -> its session, while owned
        self._shards: tuple[ExclusiveReceiver, ...] = (
            (self,) if shards == 1 else tuple(DiscordShard(self, i, shards) for i in range(shards))
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False
        self._threads: OrderedDict[str, str] = OrderedDict()  # threads we created -> parent
        self._thread_of: OrderedDict[str, asyncio.Task[str | None]] = OrderedDict()  # msg → thread
        self._read_timeout_s = read_timeout_s
        self._names = Names()
        self._policy = policy  # bindings: places that need no mention or take bots' messages

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def connection_name(self) -> str:
        """The bot's gateway lease (the token's digest names it, never the token); with several
        shards each shard's lease adds `:shard:<id>/<count>` and this names their group."""
        return f"discord:gateway:{hashlib.sha256(self._token.encode()).hexdigest()[:16]}"

    @property
    def shards(self) -> tuple[ExclusiveReceiver, ...]:
        """The parts needing an owner each: this adapter itself with one shard, else one
        `DiscordShard` per shard id."""
        return self._shards

    # -- outbound -----------------------------------------------------------------------------

    def _messageable(self, chat_id: str) -> discord.PartialMessageable:
        return self._client.get_partial_messageable(int(chat_id))

    def _reference(self, target: ReplyTarget) -> discord.MessageReference | None:
        """Reply to the user's message when it lives in the target channel; a thread's starter
        message lives in the parent channel (and shares the thread's id), so it is not quoted."""
        reply_to = target.reply_to_id
        if not reply_to or reply_to == target.chat_id or reply_to in self._threads:
            return None
        return discord.MessageReference(
            message_id=int(reply_to), channel_id=int(target.chat_id), fail_if_not_exists=False
        )

    async def _send_all(
        self, target: ReplyTarget, chunks: Sequence[Chunk], view: discord.ui.View | None = None
    ) -> SentRef:
        channel = self._messageable(target.chat_id)
        reference = self._reference(target)
        ids: list[str] = []
        for index, chunk in enumerate(chunks):
            last = index == len(chunks) - 1
            if not chunk.text.strip() and not (last and view is not None):
                continue  # Discord rejects empty messages
            extra: dict[str, Any] = {}
            if not ids and reference is not None:
                extra["reference"] = reference
            if last and view is not None:
                extra["view"] = view
            await self._pacing.send(target.chat_id)
            async with translated("send"):
                sent = await channel.send(chunk.text, allowed_mentions=_NO_PINGS, **extra)
            ids.append(str(sent.id))
        return SentRef(chat_id=target.chat_id, message_ids=tuple(ids))

    async def send(self, target: ReplyTarget, chunks: Sequence[Chunk]) -> SentRef:
        return await self._send_all(target, chunks, _buttons(chunks[-1]) if chunks else None)

    async def ask(
        self, target: ReplyTarget, chunks: Sequence[Chunk], prompt: QuestionPrompt
    ) -> SentRef:
        view = discord.ui.View(timeout=None)
        for index, option in enumerate(prompt.options[:_MAX_BUTTONS]):
            label = option if len(option) <= _BUTTON_LABEL_MAX else option[:79] + "…"
            view.add_item(
                discord.ui.Button(
                    label=label,
                    custom_id=question_custom_id(prompt.question_id, index),
                    style=discord.ButtonStyle.secondary,
                )
            )
        view.stop()  # presses are decoded from the custom id, so discord.py need not store it
        return await self._send_all(target, chunks or [Chunk(text="…", plain="…")], view)

    def open_stream(self, target: ReplyTarget) -> ReplyStream:
        """The first text as a message (replying like `send`), then edits at most one per
        `EDIT_INTERVAL_S`, continued in new messages past 2000 characters. Each post and edit
        waits on the channel's send budget, shared with the final messages and notices;
        discord.py waits out any 429 itself, which only slows the stream."""

        async def post(chunk: Chunk, first: bool) -> str:
            channel = self._messageable(target.chat_id)
            reference = self._reference(target) if first else None
            extra: dict[str, Any] = {"reference": reference} if reference is not None else {}
            view = _buttons(chunk)
            if view is not None:
                extra["view"] = view
            await self._pacing.send(target.chat_id)
            async with translated("send"):
                sent = await channel.send(chunk.text, allowed_mentions=_NO_PINGS, **extra)
            return str(sent.id)

        async def edit(message_id: str, chunk: Chunk) -> None:
            await self.edit(target, message_id, chunk)

        async def delete(message_id: str) -> None:
            message = self._messageable(target.chat_id).get_partial_message(int(message_id))
            async with translated("delete"):
                await message.delete()

        return EditStream(
            chat_id=target.chat_id,
            caps=LIMITS,
            ops=MessageOps(post=post, edit=edit, delete=delete),
            interval=EDIT_INTERVAL_S,
            stop_for=target.recipient_id,
        )

    # -- files (`FetchesFiles`, `SendsFiles`: channels/discord/files.py) ------------------------

    max_upload_bytes = MAX_UPLOAD_BYTES

    async def fetch(self, attachment: Attachment, max_bytes: int) -> bytes:
        files = DiscordFiles(client=self._client, reference=self._reference, pacing=self._pacing)
        return await files.fetch(attachment, max_bytes)

    async def send_file(self, target: ReplyTarget, name: str, data: bytes, mime: str) -> SentRef:
        files = DiscordFiles(client=self._client, reference=self._reference, pacing=self._pacing)
        return await files.send_file(target, name, data, mime)

    # -- context (`ReadsHistory`: channels/discord/history.py) ---------------------------------

    async def read_history(self, request: HistoryRequest) -> list[ContextMessage]:
        history = DiscordHistory(
            client=self._client, pacing=self._pacing, me=self._identity(), names=self._names
        )
        try:
            async with asyncio.timeout(self._read_timeout_s):
                return await history.read(request)
        except TimeoutError:
            raise PlatformError(
                "discord history read timed out", platform=_PLATFORM, code="timeout"
            ) from None

    async def edit(self, target: ReplyTarget, message_id: str, chunk: Chunk) -> None:
        message = self._messageable(target.chat_id).get_partial_message(int(message_id))
        await self._pacing.send(target.chat_id)
        async with translated("edit"):
            await message.edit(content=chunk.text, view=_buttons(chunk), allowed_mentions=_NO_PINGS)

    async def acknowledge(self, msg: InboundMessage, kind: AckKind) -> None:
        if msg.button is not None:
            return
        handle = msg.handle  # a thread starter lives in the parent channel
        channel_id = handle.channel_id if handle is not None and handle.channel_id else msg.chat_id
        message = self._messageable(channel_id).get_partial_message(int(msg.provider_message_id))
        try:
            async with translated("react"):
                await message.add_reaction(_ACK_EMOJI[kind])
        except PlatformError as exc:
            _log.warning("discord.reaction_failed", code=exc.code)
            if kind is AckKind.QUEUED:  # only a promise to answer later is worth a message
                await self.send(msg.target, [Chunk(text=_ACK_NOTICE, plain=_ACK_NOTICE)])

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        """discord.py's typing context (re-sent every 5 s); a failure only costs the indicator."""
        typing = self._messageable(target.chat_id).typing()
        entered = False
        try:
            async with translated("typing"):
                await typing.__aenter__()
            entered = True
            # discord.py's refresh loop is a task of its own; `stop()` must end it too
            self._tasks.add(typing.task)
            typing.task.add_done_callback(self._tasks.discard)
        except PlatformError as exc:
            _log.warning("discord.typing_failed", code=exc.code)
        try:
            yield
        finally:
            if entered:
                await typing.__aexit__(None, None, None)

    async def _followup(self, msg: InboundMessage, text: str, *, ephemeral: bool) -> bool:
        """Answer an interaction (a slash command, a press) through its follow-up webhook,
        from the id and token the message carries, so any process can. The first follow-up to
        a deferred command replaces its "thinking…" and is as private as the defer was."""
        handle = _followup_handle(msg)
        if handle is None:
            return False
        webhook = self._client.followup(*handle)
        await self._pacing.send(msg.chat_id)
        try:
            with routed_webhooks(self._webhooks):
                async with translated("follow-up"):
                    await webhook.send(
                        text[: LIMITS.max_len], ephemeral=ephemeral, allowed_mentions=_NO_PINGS
                    )
        except PlatformError as exc:
            _log.warning("discord.followup_failed", code=exc.code)
            return False
        return True

    async def _direct(self, msg: InboundMessage, text: str) -> bool:
        """A DM to the sender; False when Discord refused it (50007: they allow no DMs from
        this server's members). A network or server failure is raised: it may have arrived."""
        try:
            async with translated("direct message"):
                dm = await self._client.create_dm(discord.Object(int(msg.sender_id)))
            await self._pacing.send(str(dm.id))
            async with translated("direct message"):
                await dm.send(text[: LIMITS.max_len], allowed_mentions=_NO_PINGS)
        except PlatformError as exc:
            if exc.code in ("network", "timeout") or (
                isinstance(exc.code, int) and 500 <= exc.code < 600
            ):
                raise
            _log.info("discord.direct_message_failed", code=exc.code)
            return False
        return True

    async def notify(self, msg: InboundMessage, text: str, *, private: bool = False) -> bool:
        """An interaction's follow-up (ephemeral when private), else a DM when private: a
        private notice is never posted in a server's channel; if neither reaches the sender,
        the channel hears only how to let the bot DM them."""
        native = msg.native
        private = private or (native is not None and native.private)
        if (private or native is not None) and await self._followup(msg, text, ephemeral=private):
            return True
        if private and not msg.is_dm:
            if await self._direct(msg, text):
                return True
            how = "allow direct messages from this server's members (its Privacy Settings)"
            told = private_undelivered_text(f"<@{int(msg.sender_id)}>", how)
            target = replace(msg.target, reply_to_id=msg.provider_message_id or None)
            await self.send(target, [Chunk(text=told, plain=told)])
            return False
        short = text[: LIMITS.max_len]
        await self.send(msg.target, [Chunk(text=short, plain=short)])
        return True

    async def answer_button(self, msg: InboundMessage, notice: str | None) -> None:
        """The press was already acknowledged (deferred) on arrival; a notice goes to the presser
        alone, as an ephemeral follow-up."""
        if notice is not None:
            await self.notify(msg, notice, private=True)

    async def is_workspace_admin(self, msg: InboundMessage) -> bool:
        """Manage Server in this guild: for a slash command, the member's permissions Discord
        sent with it (a server may have let everyone see `/link`); else the member's roles."""
        if msg.is_dm or not msg.workspace_id:
            return False
        if msg.native is not None:
            sent = msg.handle.permissions if msg.handle is not None else "0"
            granted = discord.Permissions(int(sent) if sent.isdigit() else 0)
            return granted.manage_guild or granted.administrator
        guilds = (c.get_guild(int(msg.workspace_id)) for c in self._clients())
        guild = next((g for g in guilds if g is not None), None)
        if guild is None:
            return False
        member = guild.get_member(int(msg.sender_id))
        try:
            if member is None:
                async with translated("fetch member"):
                    member = await guild.fetch_member(int(msg.sender_id))
        except PlatformError as exc:
            _log.warning("discord.member_lookup_failed", code=exc.code)
            return False
        return member.guild_permissions.manage_guild
