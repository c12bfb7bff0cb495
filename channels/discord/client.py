"""The seam between discord.py and Switchboard: its public events where it has them, and three
hooks where it has none, each checked at start and stepping aside if an upgrade moves what it
hooks (an error logged once; intake goes on).

Public surface. Button presses come through `on_interaction`, slash commands through the
command tree's callbacks (`commands.py`), reactions (with the reactions intents: votes) through
`on_raw_reaction_add` / `_remove`; the adapter rebuilds the payloads `events.py` reads from the
`Interaction`'s and the raw reaction event's public attributes (`interaction_payload`,
`reaction_payload`). discord.py's view store
holds none of our buttons (every view we send is stopped first; a press is decoded from its
custom id alone), so it leaves their presses to us. discord.py's start-up warning that voice
needs PyNaCl/davey (we never join voice) is dropped by a filter on its `discord.client` logger,
not by flipping `VoiceClient` flags for every client in the process.

Endpoints (`DISCORD_API_BASE`, `DISCORD_GATEWAY_URL`). With Discord's own, the client keeps
discord.py's `HTTPClient` and webhook adapter. Otherwise, since discord.py builds every REST URL
as the process-wide `Route.BASE + path` and sends interaction calls through a webhook adapter
held in a context variable, the client gets `RoutedHTTP` (swaps the `Route.BASE` prefix for
`api_base`; main-gateway connects go to our gateway URL with the query discord.py built, so its
version, encoding and compression negotiation stay its own) and `RoutedWebhooks` (the same
rebasing, installed by `routed_webhooks()` around the adapter's interaction calls). The gateway
is `gateway_url` when given (every connect, resumes included: a proxy sees them all); else the
one `GET /gateway/bot` returns at `api_base`, where discord.py would dial its built-in default.
Reconnect/resume and 429 handling stay discord.py's own.

Read gate (no public equivalent: discord.py's parsers run inside its read loop and cannot wait).
`gate_reads` wraps one client's `http.ws_connect` so its main gateway socket reads the next
frame only while the adapter's gate (an `asyncio.Event`) is set: a cleared gate stops parsing
and memory stays flat; heartbeats still go out (discord.py's own thread). A pause longer than
the read timeout (60 s) ends in discord.py's timeout path: it reconnects, the new connection
waits at the gate before its HELLO, and its RESUME replays what was missed. If `ws_connect` or
the socket it returns no longer looks as expected, sockets pass through ungated.

Raw MESSAGE_CREATE (no public equivalent: `on_message` gives discord.py's model, not what
Discord sent). `TappedState`, the client's connection state (through `Client._get_state`), lets
discord.py parse as usual, then hands the wire dict to the adapter from inside the parser, so
the read gate counts events as they are read; it also turns a payload discord.py cannot parse
into a logged skip instead of a dropped connection. After construction the client checks that
its state is a `TappedState` whose MESSAGE_CREATE parser is the tap; if not, it listens to
`on_message` and converts each `discord.Message` to the same dict shape (`message_payload`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any

import discord
import structlog
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import HTTPClient, Route
from discord.state import ConnectionState
from discord.webhook.async_ import AsyncWebhookAdapter, async_context

from channels.discord.events import is_our_button

__all__ = [
    "DEFAULT_API_BASE",
    "GatedSocket",
    "PayloadHook",
    "PressHook",
    "RoutedHTTP",
    "RoutedWebhooks",
    "SwitchboardClient",
    "TappedState",
    "gate_reads",
    "interaction_payload",
    "message_payload",
    "reaction_payload",
    "routed_webhooks",
    "webhooks_for",
]

DEFAULT_API_BASE = "https://discord.com/api/v10"

PayloadHook = Callable[[dict[str, Any]], None]
PressHook = Callable[[discord.Interaction], None]
ReactionHook = Callable[[dict[str, Any]], None]

_log = structlog.get_logger(__name__)


class _NoVoiceWarning(logging.Filter):
    """Drops discord.py's start-up warning that voice is unsupported without PyNaCl / davey."""

    _WARNINGS = ("PyNaCl is not installed", "davey is not installed")

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self._WARNINGS)


_NO_VOICE_WARNING = _NoVoiceWarning()
_DISCORD_CLIENT_LOGGER = "discord.client"  # discord/client.py's `logging.getLogger(__name__)`


# -- payloads from discord.py's public models --------------------------------------------------


def _user_payload(user: discord.User | discord.Member | discord.ClientUser) -> dict[str, Any]:
    return {
        "id": str(user.id),
        "username": user.name,
        "global_name": user.global_name,
        "bot": user.bot,
    }


def interaction_payload(interaction: discord.Interaction) -> dict[str, Any]:
    """The INTERACTION_CREATE fields `events.py` and the adapter read (ids, token, `data`, the
    channel and its type, the member with their permissions there, or the DM user, the pressed
    message's id), from the interaction's public attributes."""
    payload: dict[str, Any] = {
        "id": str(interaction.id),
        "type": interaction.type.value,
        "token": interaction.token,
        "application_id": str(interaction.application_id),
        "data": dict(interaction.data or {}),
    }
    channel_id = interaction.channel_id
    if channel_id is not None:
        payload["channel_id"] = str(channel_id)
        payload["channel"] = {"id": str(channel_id)}
        kind = getattr(interaction.channel, "type", None)
        if isinstance(kind, discord.ChannelType):
            payload["channel"]["type"] = kind.value
    if interaction.guild_id is not None:
        payload["guild_id"] = str(interaction.guild_id)
    user = interaction.user
    if isinstance(user, discord.Member):
        payload["member"] = {
            "user": _user_payload(user),
            "nick": user.nick,
            "permissions": str(interaction.permissions.value),
        }
    elif isinstance(user, discord.User):
        payload["user"] = _user_payload(user)
    if interaction.message is not None:
        payload["message"] = {"id": str(interaction.message.id), "channel_id": str(channel_id)}
    return payload


def reaction_payload(event: discord.RawReactionActionEvent) -> dict[str, Any]:
    """The MESSAGE_REACTION_ADD / _REMOVE fields `events.py` and the adapter read, from
    discord.py's raw event (`event` is `add` or `remove`; Discord names the message's author and
    the guild member only on an add)."""
    payload: dict[str, Any] = {
        "event": "add" if event.event_type == "REACTION_ADD" else "remove",
        "user_id": str(event.user_id),
        "channel_id": str(event.channel_id),
        "message_id": str(event.message_id),
        "emoji": {"id": str(event.emoji.id) if event.emoji.id else None, "name": event.emoji.name},
        "message_author_id": str(event.message_author_id) if event.message_author_id else None,
        "burst": event.burst,
    }
    if event.guild_id is not None:
        payload["guild_id"] = str(event.guild_id)
    if event.member is not None:
        payload["member"] = {"user": _user_payload(event.member), "nick": event.member.nick}
    return payload


def message_payload(message: discord.Message) -> dict[str, Any]:
    """The MESSAGE_CREATE fields `events.py` and the adapter read, from a message's public
    attributes (the fallback when the raw tap is missing). Member roles are the ones the guild
    cache knows."""
    author = message.author
    payload: dict[str, Any] = {
        "id": str(message.id),
        "channel_id": str(message.channel.id),
        "type": message.type.value,
        "content": message.content,
        "author": _user_payload(author),
        "mentions": [_user_payload(user) for user in message.mentions],
        "attachments": [
            {
                "id": str(a.id),
                "filename": a.filename,
                "size": a.size,
                "url": a.url,
                "content_type": a.content_type,
            }
            for a in message.attachments
        ],
    }
    guild_id = message.guild.id if message.guild else getattr(message.channel, "guild_id", None)
    if guild_id:
        payload["guild_id"] = str(guild_id)
    if message.webhook_id:
        payload["webhook_id"] = str(message.webhook_id)
    if isinstance(author, discord.Member):
        roles = [str(role.id) for role in author.roles if not role.is_default()]
        payload["member"] = {"nick": author.nick, "roles": roles}
    reference = message.reference
    if reference is not None and reference.message_id is not None:
        payload["message_reference"] = {
            "message_id": str(reference.message_id),
            "channel_id": str(reference.channel_id),
        }
        if isinstance(reference.resolved, discord.Message):
            payload["referenced_message"] = message_payload(reference.resolved)
    return payload


# -- endpoints ---------------------------------------------------------------------------------


def _rebase(url: str, api_base: str) -> str:
    base = Route.BASE
    if api_base != base and url.startswith(base):
        return api_base + url[len(base) :]
    return url


def _is_default(api_base: str) -> bool:
    return api_base.rstrip("/") == DEFAULT_API_BASE


class RoutedHTTP(HTTPClient):
    """discord.py's HTTP client, aimed at `api_base` and our gateway (non-default endpoints)."""

    def __init__(self, *, api_base: str, gateway_url: str | None) -> None:
        super().__init__(discord.utils.MISSING)
        self.api_base = api_base.rstrip("/")
        self.gateway_url = gateway_url
        self.discovered_gateway: str | None = None

    async def request(self, route: Route, **kwargs: Any) -> Any:
        route.url = _rebase(route.url, self.api_base)
        return await super().request(route, **kwargs)

    def gateway_for(self, url: str) -> str:
        """Where a main-gateway connect to `url` actually goes."""
        asked = yarl.URL(url)
        target = self.gateway_url
        if target is None and asked.host == DiscordWebSocket.DEFAULT_GATEWAY.host:
            target = self.discovered_gateway
        if target is None:
            return url
        return str(yarl.URL(target).with_query(asked.query))

    async def ws_connect(self, url: str, *, compress: int = 0) -> Any:
        if compress != 0:  # voice connects pass their own compression level
            return await super().ws_connect(url, compress=compress)
        return await super().ws_connect(self.gateway_for(url), compress=compress)


class RoutedWebhooks(AsyncWebhookAdapter):
    """Interaction callbacks and follow-ups, aimed at `api_base`."""

    def __init__(self, api_base: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # discord.py leaves it unannotated; untyped_calls_exclude misses super() (mypy#16653)
        self.api_base = api_base.rstrip("/")

    async def request(self, route: Route, *args: Any, **kwargs: Any) -> Any:
        route.url = _rebase(route.url, self.api_base)
        return await super().request(route, *args, **kwargs)


def webhooks_for(api_base: str) -> RoutedWebhooks | None:
    """The webhook adapter for interaction calls at `api_base`; None: discord.py's own."""
    return None if _is_default(api_base) else RoutedWebhooks(api_base)


@contextlib.contextmanager
def routed_webhooks(adapter: RoutedWebhooks | None) -> Iterator[None]:
    """Send this task's interaction calls through `adapter` (discord.py reads a context var);
    None leaves discord.py's own."""
    if adapter is None:
        yield
        return
    token = async_context.set(adapter)
    try:
        yield
    finally:
        async_context.reset(token)


# -- the read gate -----------------------------------------------------------------------------


class GatedSocket:
    """A gateway websocket that reads the next frame only while `gate` is set. Waiting at the gate
    counts against the read's own timeout, so discord.py's timeout handling stays in charge."""

    def __init__(self, socket: Any, gate: asyncio.Event) -> None:
        self._socket = socket
        self._gate = gate

    async def receive(self, timeout: float | None = None) -> Any:
        if not self._gate.is_set():
            await asyncio.wait_for(self._gate.wait(), timeout)
        return await self._socket.receive(timeout=timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._socket, name)


def _takes_timeout(method: Any) -> bool:
    """Whether `method` is a coroutine function that accepts `timeout=` (aiohttp's receive)."""
    if not inspect.iscoroutinefunction(method):
        return False
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "timeout" or p.kind is p.VAR_KEYWORD for p in params)


def gate_reads(http: HTTPClient, gate: asyncio.Event) -> None:
    """Make the main gateway sockets `http` opens read only while `gate` is set: this one
    instance's `ws_connect` is wrapped, discord.py's class is left alone. If `ws_connect` is not
    a coroutine function, or a socket it returns has no `receive(timeout=)`, sockets pass through
    ungated and an error is logged once: a pause that no longer pauses beats a connect that
    fails."""
    connect = getattr(http, "ws_connect", None)
    reported = False

    def step_aside(reason: str) -> None:
        nonlocal reported
        if not reported:
            reported = True
            _log.error("discord.read_gate_unavailable", reason=reason, fallback="ungated")

    if connect is None or not inspect.iscoroutinefunction(connect):
        step_aside("ws_connect is no coroutine function")
        return

    async def gated_connect(*args: Any, **kwargs: Any) -> Any:
        socket = await connect(*args, **kwargs)
        if kwargs.get("compress", 0):  # voice connects pass their own compression level
            return socket
        if not _takes_timeout(getattr(socket, "receive", None)):
            step_aside(f"ws_connect returned {type(socket).__name__} without receive(timeout=)")
            return socket
        return GatedSocket(socket, gate)

    http.ws_connect = gated_connect  # type: ignore[method-assign]  # this instance's only, by design


# -- the raw MESSAGE_CREATE tap ----------------------------------------------------------------


def _guarded(event: str, parser: Callable[[Any], None]) -> Callable[[Any], None]:
    """`parser`, but an event discord.py cannot parse (a field a newer API version dropped,
    say) is logged and skipped instead of ending the gateway connection for good."""

    def parse(data: Any) -> None:
        try:
            parser(data)
        except Exception as exc:
            _log.error("discord.event_skipped", kind=event, error=type(exc).__name__, exc_info=exc)

    parse.__wrapped__ = parser  # type: ignore[attr-defined]  # how `_tapped` finds the parser
    return parse


class TappedState(ConnectionState["SwitchboardClient"]):
    """discord.py's connection state, passing raw MESSAGE_CREATEs on.

    Parsers run inside discord.py's gateway read loop, where an exception would drop the
    connection; so a payload our hook cannot take is logged and skipped, never raised."""

    on_message_payload: PayloadHook | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        parsers = getattr(self, "parsers", None)
        if isinstance(parsers, dict):
            for event, parser in list(parsers.items()):
                parsers[event] = _guarded(event, parser)

    def parse_message_create(self, data: Any) -> None:
        super().parse_message_create(data)
        if self.on_message_payload is not None:
            try:
                self.on_message_payload(data)
            except Exception:
                _log.exception("discord.message_tap_failed")


def _tapped(state: Any) -> TappedState | None:
    """`state` when its MESSAGE_CREATE parser is the tap (as discord.py 2.7 builds it)."""
    if not isinstance(state, TappedState):
        return None
    parsers = getattr(state, "parsers", None)
    parser = parsers.get("MESSAGE_CREATE") if isinstance(parsers, dict) else None
    return state if getattr(parser, "__wrapped__", None) == state.parse_message_create else None


class SwitchboardClient(discord.Client):
    """A `discord.Client` that never pings anyone by default and hands the adapter raw message
    payloads (`on_message_payload`), presses on our buttons (`on_press`) and on anything else
    (`on_foreign_press`), and reactions (`on_reaction`, with the reactions intents)."""

    def __init__(
        self,
        *,
        intents: discord.Intents,
        guild_ready_timeout: float,
        on_ready: Callable[[], None],
        on_message_payload: PayloadHook,
        on_press: PressHook,
        on_foreign_press: PressHook | None = None,
        on_reaction: ReactionHook | None = None,
        api_base: str = DEFAULT_API_BASE,
        gateway_url: str | None = None,
        read_gate: asyncio.Event | None = None,
        shard: tuple[int, int] | None = None,
        heartbeat_timeout: float = 60.0,
    ) -> None:
        """`shard` (id, count) makes this client one shard's gateway session; None: all of it.
        `heartbeat_timeout` bounds each gateway read (discord.py's own default: 60 s); gateway
        reads wait while `read_gate` is cleared."""
        logging.getLogger(_DISCORD_CLIENT_LOGGER).addFilter(_NO_VOICE_WARNING)  # once: a set
        shard_id, shard_count = shard if shard else (None, None)
        super().__init__(
            intents=intents,
            allowed_mentions=discord.AllowedMentions.none(),
            guild_ready_timeout=guild_ready_timeout,
            heartbeat_timeout=heartbeat_timeout,
            max_messages=None,
            chunk_guilds_at_startup=False,
            shard_id=shard_id,
            shard_count=shard_count,
        )
        if not _is_default(api_base) or gateway_url is not None:
            self.http = RoutedHTTP(api_base=api_base, gateway_url=gateway_url)
            self._connection.http = self.http
        if read_gate is not None:
            gate_reads(self.http, read_gate)
        self._sb_on_ready = on_ready
        self._sb_on_press = on_press
        self._sb_on_foreign_press = on_foreign_press
        self._sb_on_reaction = on_reaction
        self.tree: Any = None  # its app_commands.CommandTree (set by the adapter), as on Bot
        self.tapped = self._tap(on_message_payload)

    def _get_state(self, **options: Any) -> ConnectionState[Any]:
        try:
            return TappedState(
                dispatch=self.dispatch,
                handlers=self._handlers,
                hooks=self._hooks,
                http=self.http,
                **options,
            )
        except Exception:  # discord.py now builds its state differently: `_tap` falls back
            _log.exception("discord.tapped_state_failed")
            return super()._get_state(**options)

    def _tap(self, hook: PayloadHook) -> bool:
        """Hand raw MESSAGE_CREATEs to `hook` through the tap; if discord.py bypassed it, log
        once and listen to `on_message` instead (payloads rebuilt from the `Message`)."""
        state = _tapped(self._connection)
        if state is not None:
            state.on_message_payload = hook
            return True
        _log.error(
            "discord.message_tap_missing",
            state=type(self._connection).__name__,
            fallback="on_message",
        )

        async def on_message(message: discord.Message) -> None:
            hook(message_payload(message))

        self.event(on_message)
        return False

    def clear(self) -> None:
        """discord.py's reset before a restart keeps the HTTP connector that closing the old
        session also closed; the next login then needs a new one."""
        super().clear()
        connector = getattr(self.http, "connector", None)
        if connector is not None and connector is not discord.utils.MISSING and connector.closed:
            self.http.connector = discord.utils.MISSING

    async def setup_hook(self) -> None:
        http = self.http
        if not isinstance(http, RoutedHTTP) or http.gateway_url is not None:
            return
        try:
            _, url, _ = await http.get_bot_gateway()
        except discord.GatewayNotFound:
            _log.warning("discord.gateway_lookup_failed", api_base=http.api_base)
            return
        http.discovered_gateway = url

    async def on_ready(self) -> None:
        self._sb_on_ready()

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        """A press on one of our buttons goes to `on_press`; a press on any other component, or
        a modal submitted, to `on_foreign_press`: discord.py's view store holds none of our
        views, so nothing else answers it. Commands are the command tree's."""
        kind = interaction.type
        if kind is discord.InteractionType.component:
            custom_id = str(dict(interaction.data or {}).get("custom_id", ""))
            if is_our_button(custom_id):
                self._sb_on_press(interaction)
                return
        elif kind is not discord.InteractionType.modal_submit:
            return
        if self._sb_on_foreign_press is not None:
            self._sb_on_foreign_press(interaction)

    async def on_raw_reaction_add(self, event: discord.RawReactionActionEvent) -> None:
        if self._sb_on_reaction is not None:
            self._sb_on_reaction(reaction_payload(event))

    async def on_raw_reaction_remove(self, event: discord.RawReactionActionEvent) -> None:
        if self._sb_on_reaction is not None:
            self._sb_on_reaction(reaction_payload(event))

    def followup(self, application_id: str, token: str) -> discord.Webhook:
        """An interaction's follow-up webhook from its application id and token alone (valid 15
        minutes), so any process can answer an interaction another one received; the same
        webhook `Interaction.followup` makes."""
        data: Any = {"id": application_id, "type": 3, "token": token}
        return discord.Webhook.from_state(data=data, state=self._connection)
