"""The Discord adapter (discord.py 2): gateway in, `InboundMessage`s out, rendered chunks back.

Conversations (the table in `channels/message.py`): a DM is one conversation; a guild-channel message that mentions the bot
gets a thread created from it *before* delivery, and the message is delivered with that thread as
its chat, so the key is `discord:<guild>:<thread>` and the reply lands there. Later messages in a
thread the bot owns (created in this process, or cached with `owner_id` = the bot, which survives a
restart) need no mention. If the thread cannot be made, the reply goes to the channel, as a reply
to the message. Thread creation is idempotent per message (a replayed MESSAGE_CREATE after a
RESUME gets the same thread: remembered here, or recovered from Discord's "thread already
created" error, since a thread started from a message has that message's id), so the manager's
dedupe on chat + message id sees the duplicate.

Slash commands come from the command registry through discord.py's `app_commands`
(`discord/commands.py`), registered by whoever holds the gateway when Discord's differ. An
interaction is deferred at once (ephemeral when the registry says the answer is private), then
delivered like a message; whichever worker answers it uses the follow-up webhook named by the
application id and interaction token the message carries (valid 15 minutes), as presses do.

With `votes` (feedback on), a 👍/👎 *reaction* on an answer counts as a press on its 👍/👎
button does: the reactions intents are asked for (not otherwise: no cost with feedback off),
the answer's run is read once from its own buttons, and the vote goes to the manager shaped as
a press, so one vote per person per answer holds across both (a later one replaces it). Taking
one away withdraws the vote unless the other is still on (asked of Discord, one read).

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
import functools
import hashlib
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import discord
import structlog
from discord import app_commands

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
    deliver_until_taken,
    private_undelivered_text,
)
from channels.bindings import DEFAULT_POLICY, PlacePolicy, PolicyFor, Subject
from channels.commands import CommandSpec
from channels.discord.client import (
    DEFAULT_API_BASE,
    SwitchboardClient,
    interaction_payload,
    routed_webhooks,
    webhooks_for,
)
from channels.discord.commands import build_tree, local_commands, needs_sync
from channels.discord.errors import THREAD_ALREADY_CREATED, translated
from channels.discord.events import (
    BotIdentity,
    command_to_inbound,
    is_for_bot,
    is_stop_custom_id,
    other_vote_emoji,
    press_to_inbound,
    question_custom_id,
    reaction_to_inbound,
    reaction_value,
    stop_custom_id,
    stop_to_inbound,
    strip_mention,
    thread_name,
    to_inbound,
    vote_custom_id,
    vote_run,
    vote_to_inbound,
)
from channels.discord.files import MAX_UPLOAD_BYTES, DiscordFiles
from channels.discord.history import DiscordHistory
from channels.discord.pacing import SEND_LIMITS, DiscordLimits, DiscordPacing
from channels.message import Attachment, InboundMessage, Platform, ReplyTarget
from channels.metrics import INGRESS_PAUSES, INGRESS_WAITING
from channels.names import Names
from channels.send_budget import LocalPacer, Pacer
from channels.streaming import EditStream, MessageOps
from switchboard.conversation import ContextMessage
from switchboard.errors import PlatformAuthError, PlatformError

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

INTENTS = discord.Intents(guilds=True, guild_messages=True, dm_messages=True, message_content=True)
VOTE_INTENTS = discord.Intents(guild_reactions=True, dm_reactions=True)  # with votes on: 👍/👎

EDIT_INTERVAL_S = 1.2  # Discord allows 5 edits per 5 s in a channel; keep under it
MAX_WAITING = 256  # events read but not yet taken by the inbox before the gateway is paused

_NO_PINGS = discord.AllowedMentions.none()
_PLATFORM = str(Platform.DISCORD)
_THREAD_ARCHIVE_MIN: Final = 1440  # threads auto-archive after a day without messages
_REMEMBERED = 4096  # bound on each in-memory map (threads, message→thread, interactions)
_BUTTON_LABEL_MAX = 80
_MAX_BUTTONS = 25
_RESTART_MIN_S = 1.0  # first pause before restarting a gateway that died; doubles each time
_RESTART_MAX_S = 60.0
_READ_TIMEOUT_S = 8.0  # a context read taking longer is given up on; the turn goes on
_ACK_EMOJI = {AckKind.QUEUED: "⏳", AckKind.RECEIVED: "👀", AckKind.STEERED: "✍️"}
_PRESS_GONE = "That button is no longer active, so nothing was done."
_COMMAND_GONE = "That command is no longer available."
_COMMAND_FAILED = "Sorry, that command could not be run."
_STALE_COMMAND = (app_commands.CommandNotFound, app_commands.CommandSignatureMismatch)
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


def _remember(store: OrderedDict[str, Any], key: str, value: Any) -> None:
    store[key] = value
    store.move_to_end(key)
    while len(store) > _REMEMBERED:
        store.popitem(last=False)


@dataclass(eq=False)
class _Gateway:
    """One gateway session: its client (the adapter's own, or one shard's), READY, its task."""

    client: SwitchboardClient
    ready: asyncio.Event
    shard: int | None = None
    task: asyncio.Task[None] | None = None
    opened: bool = False  # READY once: only then does `/readyz` count it

    @property
    def up(self) -> bool:
        ws = self.client.ws
        return (
            self.task is not None
            and not self.task.done()
            and self.client.is_ready()
            and ws is not None
            and ws.open
        )


class DiscordShard:
    """One shard's gateway session as an `ExclusiveReceiver`: opened while this process holds
    the shard's lease; sends always go through the adapter's own client."""

    def __init__(self, adapter: DiscordAdapter, shard_id: int, shard_count: int) -> None:
        self._adapter = adapter
        self.shard_id = shard_id
        self.shard_count = shard_count

    @property
    def connection_name(self) -> str:
        return f"{self._adapter.connection_name}:shard:{self.shard_id}/{self.shard_count}"

    async def start_receiving(self) -> None:
        await self._adapter.open_shard(self.shard_id)

    async def stop_receiving(self) -> None:
        await self._adapter.close_shard(self.shard_id)


class DiscordAdapter:
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

    def _new_client(self, ready: asyncio.Event, shard: tuple[int, int] | None) -> SwitchboardClient:
        client = SwitchboardClient(
            api_base=self._api_base,
            gateway_url=self._gateway_url,
            read_gate=self._read_gate,
            intents=INTENTS | VOTE_INTENTS if self._votes else INTENTS,
            guild_ready_timeout=self._guild_ready_timeout,
            on_ready=ready.set,
            on_message_payload=self._on_message_payload,
            on_press=self._on_press,
            on_foreign_press=self._on_foreign_press,
            on_reaction=self._on_reaction if self._votes else None,
            shard=shard,
            heartbeat_timeout=self._heartbeat_timeout,
        )
        client.tree = build_tree(
            client, self._on_app_command, guilds=self._command_guilds, on_error=self._on_tree_error
        )
        return client

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

    async def start(self, *, receive: bool = True) -> None:
        if receive and self._shard_count == 1:
            await self.start_receiving()
            return
        async with translated("login"):  # sending needs only the HTTP client
            await self._client.login(self._token)
        self._logged_in = True
        _log.info("discord.started", receive=receive, shards=self._shard_count)
        if receive:
            await self.start_receiving()

    async def stop_receiving(self) -> None:
        """Close the gateway, keep sending (a fresh HTTP login after discord.py's close)."""
        if self._shard_count > 1:
            await asyncio.gather(*(self.close_shard(i) for i in list(self._sessions)))
            return
        if self._main.task is None:
            return
        await self._close(self._main)
        self._client.clear()
        async with translated("login"):
            await self._client.login(self._token)
        self._logged_in = True
        _log.info("discord.gateway_closed")

    async def start_receiving(self) -> None:
        if self._shard_count > 1:
            for shard in self._shards:
                await shard.start_receiving()
            return
        if self._main.task is not None:
            return
        logged_in, self._logged_in = self._logged_in, False
        try:
            await self._open(self._main, logged_in=logged_in)
        except PlatformError:
            await self.stop()
            raise
        await self._sync_commands()  # whoever receives registers; workers never do

    async def open_shard(self, shard_id: int) -> None:
        """Run shard `shard_id`'s gateway session (its own client) until `close_shard`."""
        if shard_id in self._sessions or self._stopped:
            return
        ready = asyncio.Event()
        client = self._new_client(ready, (shard_id, self._shard_count))
        gateway = _Gateway(client=client, ready=ready, shard=shard_id)
        self._sessions[shard_id] = gateway
        try:
            await self._open(gateway, logged_in=False)
        except BaseException:
            if self._sessions.get(shard_id) is gateway:
                del self._sessions[shard_id]
            await self._close(gateway)
            raise
        if shard_id == 0:  # one shard's owner registers the commands for the bot
            await self._sync_commands()

    async def close_shard(self, shard_id: int) -> None:
        gateway = self._sessions.pop(shard_id, None)
        if gateway is None:
            return
        await self._close(gateway)
        _log.info("discord.gateway_closed", shard=shard_id)

    async def _open(self, gateway: _Gateway, *, logged_in: bool) -> None:
        """Start `gateway` and wait for its READY; raise if its task ends first (or none comes)."""
        name = "discord.gateway" if gateway.shard is None else f"discord.gateway:{gateway.shard}"
        task = asyncio.create_task(self._run_gateway(gateway, logged_in=logged_in), name=name)
        gateway.task = task
        task.add_done_callback(lambda done: self._gateway_ended(gateway, done))
        ready = asyncio.create_task(gateway.ready.wait())
        done, _ = await asyncio.wait(
            {task, ready}, timeout=self._start_timeout, return_when="FIRST_COMPLETED"
        )
        if ready in done:
            gateway.opened = True
            _log.info("discord.connected", bot_id=self._me().id, shard=gateway.shard)
            return
        ready.cancel()
        failure: BaseException | None = None
        if task in done and not task.cancelled():
            failure = task.exception()
        if isinstance(failure, discord.LoginFailure):
            raise PlatformAuthError("discord: token rejected", platform=_PLATFORM) from failure
        reason = type(failure).__name__ if failure else f"no READY within {self._start_timeout:g} s"
        raise PlatformError(
            f"discord: gateway did not become ready ({reason}; check DISCORD_BOT_TOKEN, the "
            "Message Content intent, DISCORD_GATEWAY_URL and SWITCHBOARD_DISCORD_SHARDS)",
            platform=_PLATFORM,
            code="start",
        ) from failure

    async def _close(self, gateway: _Gateway) -> None:
        task, gateway.task = gateway.task, None
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10.0):
                await gateway.client.close()
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=10.0)
        gateway.ready.clear()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._read_gate.set()  # a paused session must see its close
        await asyncio.gather(*(self.close_shard(i) for i in list(self._sessions)))
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10.0):
                await self._client.close()
        gateway = self._main.task
        if gateway is not None and not gateway.done():
            gateway.cancel()
        pending = [t for t in (gateway, *self._tasks) if t is not None and not t.done()]
        for task in self._tasks:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=10.0)
        _log.info("discord.stopped")

    @property
    def healthy(self) -> bool:
        """Connected to the gateway and READY (for `/readyz`): false while discord.py
        reconnects, and while the gateway is being restarted after a failure. With several
        shards: logged in for sending, and every shard this process has opened is up."""
        if self._shard_count > 1:
            return self._logged_in and all(g.up for g in self._sessions.values() if g.opened)
        if self._main.task is None and self._logged_in:
            return True  # a send-only (worker or standby) adapter needs no gateway
        return self._main.up

    async def _run_gateway(self, gateway: _Gateway, *, logged_in: bool) -> None:
        """discord.py's login + gateway loop, restarted with backoff when it ends on an error
        the library does not retry itself; a rejected token, or a failure before the first
        READY, ends it (so `start()` reports it)."""
        client = gateway.client
        delay = _RESTART_MIN_S
        while True:
            try:
                if logged_in:  # a send-only adapter already has its HTTP session
                    logged_in = False
                    await client.connect(reconnect=True)
                else:
                    await client.start(self._token)
                return
            except (discord.LoginFailure, discord.PrivilegedIntentsRequired):
                raise
            except Exception as exc:
                if self._stopped or not gateway.ready.is_set():
                    raise
                _log.error(
                    "discord.gateway_failed",
                    shard=gateway.shard,
                    error=type(exc).__name__,
                    restart_in_s=delay,
                    exc_info=exc,
                )
            with contextlib.suppress(Exception):
                await client.close()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RESTART_MAX_S)
            if self._stopped or gateway.task is not asyncio.current_task():
                return
            client.clear()

    def _gateway_ended(self, gateway: _Gateway, task: asyncio.Task[None]) -> None:
        if self._stopped or task.cancelled() or gateway.task is not task:
            return  # stopped, or closed on purpose (lease lost or let go)
        exc = task.exception()
        _log.error(
            "discord.gateway_ended", shard=gateway.shard, error=type(exc).__name__ if exc else None
        )

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _take_in(self, coro: Any) -> asyncio.Task[None]:
        """Handle one inbound event in its own task. While the inbox cannot take them (a Redis
        outage), tasks would pile up one per event: at `max_waiting` the gateway stops being
        read, and it is read again once half of them were taken. Discord holds the rest."""
        self._waiting += 1
        INGRESS_WAITING.labels(_PLATFORM).set(self._waiting)
        if self._waiting >= self._max_waiting and self._read_gate.is_set():
            self._read_gate.clear()
            INGRESS_PAUSES.labels(_PLATFORM).inc()
            _log.warning("discord.ingress_paused", waiting=self._waiting)
        task = self._spawn(coro)
        task.add_done_callback(self._taken)
        return task

    def _taken(self, _task: asyncio.Task[None]) -> None:
        self._waiting -= 1
        INGRESS_WAITING.labels(_PLATFORM).set(self._waiting)
        if not self._read_gate.is_set() and self._waiting <= self._max_waiting // 2:
            self._read_gate.set()
            _log.info("discord.ingress_resumed", waiting=self._waiting)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            _log.error("discord.event_failed", error=type(exc).__name__, exc_info=exc)

    def _me(self) -> BotIdentity:
        user = self._client.user
        assert user is not None, "used before READY"
        return BotIdentity(id=str(user.id), name=user.name)

    # -- inbound ------------------------------------------------------------------------------

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

    def _on_reaction(self, payload: dict[str, Any]) -> None:
        """A 👍/👎 put on or taken off a message by someone other than a bot: maybe a vote on an
        answer of ours. Any other reaction (a super reaction too), or one on a message known not
        to be ours, costs nothing more. One person's reactions on one message are handled in the
        order Discord sent them, so the later one is the vote that stands."""
        if self._stopped or payload["burst"] or not reaction_value(payload["emoji"]):
            return
        me, message_id, user_id = self._identity().id, payload["message_id"], payload["user_id"]
        if user_id == me or ((payload.get("member") or {}).get("user") or {}).get("bot"):
            return
        author = payload.get("message_author_id")  # Discord names it on an add only
        if author and author != me:
            _remember(self._answers, message_id, "")
            return
        if self._answers.get(message_id) == "":
            return
        key = (message_id, user_id)
        task = self._take_in(self._handle_reaction(payload, after=self._reacting.get(key)))
        self._reacting[key] = task
        task.add_done_callback(functools.partial(self._reacted, key))

    def _reacted(self, key: tuple[str, str], task: asyncio.Task[None]) -> None:
        if self._reacting.get(key) is task:
            del self._reacting[key]

    async def _handle_reaction(
        self, payload: dict[str, Any], *, after: asyncio.Task[None] | None
    ) -> None:
        """A 👍/👎 on one of our answers as the reacting person's vote, delivered as a press on
        its button is (whoever sees the answer may rate it, one vote each): putting one on casts
        it, replacing an earlier one; taking one off leaves the other standing when they still
        have it on the answer, and withdraws the vote when not."""
        if after is not None:
            await asyncio.wait([after])
        channel_id, message_id, user_id = (
            payload["channel_id"],
            payload["message_id"],
            payload["user_id"],
        )
        structlog.contextvars.bind_contextvars(
            platform=_PLATFORM, chat_id=channel_id, event_id=message_id
        )
        run_id = await self._answer_run(channel_id, message_id)
        if not run_id:
            return
        value = reaction_value(payload["emoji"])
        if payload["event"] == "remove":
            other = other_vote_emoji(str(payload["emoji"]["name"]))
            still = await self._still_on(channel_id, message_id, user_id, other)
            if still is None:
                return
            value = reaction_value({"name": other}) if still else ""
        msg = reaction_to_inbound(
            payload, value=value, run_id=run_id, event_id=f"r{secrets.token_hex(8)}"
        )
        _log.info("vote.reacted", value=value or "withdrawn")
        await deliver_until_taken(self._deliver, msg, stopping=lambda: self._stopped)

    async def _answer_run(self, channel_id: str, message_id: str) -> str:
        """The run the reacted message answered, from its own 👍/👎 buttons (read once, then
        remembered); "" for a message that is not a final answer of ours."""
        known = self._answers.get(message_id)
        if known is not None:
            return known
        await self._pacing.read()
        try:
            async with asyncio.timeout(self._read_timeout_s), translated("read reacted message"):
                data = await self._client.http.get_message(channel_id, message_id)
        except (PlatformError, TimeoutError) as exc:
            _log.warning("discord.reacted_message_unread", code=getattr(exc, "code", "timeout"))
            return ""
        me = self._identity().id
        run = vote_run(data, me)
        if run or str((data.get("author") or {}).get("id") or "") != me:
            _remember(self._answers, message_id, run)  # ours without buttons may yet get them
        return run

    async def _still_on(
        self, channel_id: str, message_id: str, user_id: str, emoji: str
    ) -> bool | None:
        """Whether `user_id` still has the reaction `emoji` on the message (False when Discord
        cannot tell us: the vote is withdrawn); None when they are a bot. Discord lists who
        reacted in order of id, so the first one after `user_id - 1` is them if they are there."""
        await self._pacing.read()
        try:
            async with asyncio.timeout(self._read_timeout_s), translated("read reactions"):
                users = await self._client.http.get_reaction_users(
                    channel_id, message_id, emoji, 1, after=int(user_id) - 1
                )
        except (PlatformError, TimeoutError) as exc:
            _log.warning("discord.reactions_unread", code=getattr(exc, "code", "timeout"))
            return False
        them = [u for u in users if str(u.get("id")) == user_id]
        if not them:
            return False
        return None if them[0].get("bot") else True

    def _clients(self) -> list[SwitchboardClient]:
        """Whose caches know guilds, channels and threads: ours, and each open shard's."""
        return [self._client, *(g.client for g in self._sessions.values())]

    def _channel(self, channel_id: str) -> Any:
        for client in self._clients():
            channel = client.get_channel(int(channel_id))
            if channel is not None:
                return channel
        return None

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
            _remember(self._thread_of, message_id, task)
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
        _remember(self._threads, thread_id, channel_id)
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

    async def _sync_commands(self) -> None:
        """Register the application commands (globally, or in `command_guilds`) when what
        Discord holds differs; a failure is logged (the text forms keep working)."""
        tree, http = self._client.tree, self._client.http
        scopes: list[discord.Object | None] = [discord.Object(g) for g in self._command_guilds]
        for guild in scopes or [None]:
            where = "global" if guild is None else str(guild.id)
            local = local_commands(tree, guild)
            app = self._client.application_id
            try:
                async with translated("sync commands"):
                    if app is None:
                        raise discord.app_commands.MissingApplicationID
                    remote = await (
                        http.get_global_commands(app)
                        if guild is None
                        else http.get_guild_commands(app, guild.id)
                    )
                    if not needs_sync(local, remote):
                        _log.info("discord.commands_unchanged", scope=where)
                        continue
                    await tree.sync(guild=guild)
            except (PlatformError, discord.DiscordException) as exc:
                _log.warning("discord.commands_sync_failed", scope=where, error=type(exc).__name__)
                continue
            _log.info("discord.commands_synced", scope=where, commands=len(local))

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

    def _identity(self) -> BotIdentity:
        """Who we are, also in a worker's send-only client (logged in over HTTP, no READY)."""
        user = self._client.user
        if user is not None:
            return BotIdentity(id=str(user.id), name=user.name)
        return BotIdentity(id=str(self._client.application_id or ""))

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
