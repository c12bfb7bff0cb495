"""The seam between discord.py and Switchboard: other endpoints, and the raw gateway payloads.

Endpoints (`DISCORD_API_BASE`, `DISCORD_GATEWAY_URL`). discord.py builds every REST URL as
`Route.BASE + path`; `Route.BASE` is a class attribute shared by the whole process, and interaction
callbacks and follow-ups go through a separate webhook adapter held in a context variable. Instead
of mutating those globals, each client gets:
- `RoutedHTTP`, an `HTTPClient` that swaps the `Route.BASE` prefix of each request URL for
  `api_base`, and sends main-gateway websocket connects to our gateway URL (the query discord.py
  built is kept, so its version, encoding and compression negotiation stay its own);
- `RoutedWebhooks`, the same rebasing for the webhook adapter, installed by `routed_webhooks()`
  around the adapter's interaction calls.
The gateway URL is `gateway_url` when given (every connect, resumes included, goes there: a proxy
sees them all); otherwise the one `GET /gateway/bot` returns at `api_base`, used where discord.py
would dial its built-in default, while resumes follow READY's `resume_gateway_url` as usual.
Reconnect/resume and 429 handling stay discord.py's own.

Pausing the gateway. discord.py has no public way to stop reading events (its parsers run inside
its read loop and cannot wait). `RoutedHTTP` can be given a `read_gate` (an `asyncio.Event`): the
main gateway socket it opens reads the next frame only while the gate is set. A cleared gate
stops the read loop where it is, so nothing more is parsed and memory stays flat; heartbeats still
go out (discord.py sends them from its own thread). A pause longer than the read timeout (the
heartbeat timeout, 60 s) ends in discord.py's usual timeout path: it closes the socket (4000) and
reconnects, and the new connection waits at the gate before its HELLO, so its RESUME (with the
last sequence read) is sent only once the gate opens, and Discord replays what was missed (while
the session is still resumable).

Raw payloads. `TappedState` guards every parser (a payload discord.py cannot parse is logged and
skipped, not fatal to the connection), lets discord.py parse MESSAGE_CREATE as usual and then hands the wire
dict to the adapter; component interactions whose custom id is ours are handed over with their
`Interaction` (and skip discord.py's view store, which never holds our buttons); a slash command's
wire payload is handed over before discord.py's command tree dispatches it, so the adapter builds
its message from what Discord sent.
"""

from __future__ import annotations

import asyncio
import contextlib
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
    "CommandPayloadHook",
    "GatedSocket",
    "PayloadHook",
    "PressHook",
    "RoutedHTTP",
    "RoutedWebhooks",
    "SwitchboardClient",
    "TappedState",
    "routed_webhooks",
]

DEFAULT_API_BASE = "https://discord.com/api/v10"

PayloadHook = Callable[[dict[str, Any]], None]
PressHook = Callable[[dict[str, Any], discord.Interaction], None]
CommandPayloadHook = Callable[[dict[str, Any]], None]

_log = structlog.get_logger(__name__)


def _rebase(url: str, api_base: str) -> str:
    base = Route.BASE
    if api_base != base and url.startswith(base):
        return api_base + url[len(base) :]
    return url


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


class RoutedHTTP(HTTPClient):
    """discord.py's HTTP client, aimed at `api_base` and our gateway, whose main gateway socket
    is read only while `read_gate` is set (when one is given)."""

    def __init__(
        self, *, api_base: str, gateway_url: str | None, read_gate: asyncio.Event | None = None
    ) -> None:
        super().__init__(discord.utils.MISSING)
        self.api_base = api_base.rstrip("/")
        self.gateway_url = gateway_url
        self.discovered_gateway: str | None = None
        self.read_gate = read_gate

    async def request(self, route: Route, **kwargs: Any) -> Any:
        route.url = _rebase(route.url, self.api_base)
        return await super().request(route, **kwargs)

    def clear(self) -> None:
        """discord.py's reset before a restart, which would keep the connector that closing
        the old session also closed; the next login then needs a new one."""
        super().clear()
        connector = self.connector
        if connector is not discord.utils.MISSING and connector.closed:
            self.connector = discord.utils.MISSING

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
        socket = await super().ws_connect(self.gateway_for(url), compress=compress)
        return socket if self.read_gate is None else GatedSocket(socket, self.read_gate)


class RoutedWebhooks(AsyncWebhookAdapter):
    """Interaction callbacks and follow-ups, aimed at `api_base`."""

    def __init__(self, api_base: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # discord.py leaves it unannotated; untyped_calls_exclude misses super() (mypy#16653)
        self.api_base = api_base.rstrip("/")

    async def request(self, route: Route, *args: Any, **kwargs: Any) -> Any:
        route.url = _rebase(route.url, self.api_base)
        return await super().request(route, *args, **kwargs)


@contextlib.contextmanager
def routed_webhooks(adapter: RoutedWebhooks) -> Iterator[None]:
    """Send this task's interaction calls through `adapter` (discord.py reads a context var)."""
    token = async_context.set(adapter)
    try:
        yield
    finally:
        async_context.reset(token)


def _guarded(event: str, parser: Callable[[Any], None]) -> Callable[[Any], None]:
    """`parser`, but an event discord.py cannot parse (a field a newer API version dropped,
    say) is logged and skipped instead of ending the gateway connection for good."""

    def parse(data: Any) -> None:
        try:
            parser(data)
        except Exception as exc:
            _log.error("discord.event_skipped", kind=event, error=type(exc).__name__, exc_info=exc)

    return parse


class TappedState(ConnectionState["SwitchboardClient"]):
    """discord.py's connection state, passing raw MESSAGE_CREATEs and our button presses on.

    Parsers run inside discord.py's gateway read loop, where an exception would drop the
    connection; so a payload our hooks cannot take is logged and skipped, never raised."""

    on_message_payload: PayloadHook | None = None
    on_press: PressHook | None = None
    on_command_payload: CommandPayloadHook | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for event, parser in list(self.parsers.items()):
            self.parsers[event] = _guarded(event, parser)

    def parse_message_create(self, data: Any) -> None:
        super().parse_message_create(data)
        if self.on_message_payload is not None:
            try:
                self.on_message_payload(data)
            except Exception:
                _log.exception("discord.message_tap_failed")

    def parse_interaction_create(self, data: Any) -> None:
        if data.get("type") == 2 and self.on_command_payload is not None:
            try:
                self.on_command_payload(data)
            except Exception:
                _log.exception("discord.command_tap_failed")
        custom_id = str((data.get("data") or {}).get("custom_id", ""))
        if data.get("type") != 3 or not is_our_button(custom_id) or self.on_press is None:
            super().parse_interaction_create(data)
            return
        try:
            self.on_press(data, discord.Interaction(data=data, state=self))
        except Exception:
            _log.exception("discord.press_tap_failed")


class SwitchboardClient(discord.Client):
    """A `discord.Client` on `RoutedHTTP` and `TappedState`, never pinging anyone by default."""

    def __init__(
        self,
        *,
        http: RoutedHTTP,
        intents: discord.Intents,
        guild_ready_timeout: float,
        on_ready: Callable[[], None],
        shard: tuple[int, int] | None = None,
        heartbeat_timeout: float = 60.0,
    ) -> None:
        """`shard` (id, count) makes this client one shard's gateway session; None: all of it.
        `heartbeat_timeout` bounds each gateway read (discord.py's own default: 60 s)."""
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
        self.http = http
        self._connection.http = http
        self._sb_on_ready = on_ready
        self.tree: Any = None  # its app_commands.CommandTree (set by the adapter), as on Bot
        # We never join voice; without this discord.py warns at every start that PyNaCl is missing.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False

    @property
    def state(self) -> TappedState:
        state = self._connection
        assert isinstance(state, TappedState)
        return state

    def _get_state(self, **options: Any) -> TappedState:
        return TappedState(
            dispatch=self.dispatch,
            handlers=self._handlers,
            hooks=self._hooks,
            http=self.http,
            **options,
        )

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

    def followup(self, application_id: str, token: str) -> discord.Webhook:
        """An interaction's follow-up webhook from its application id and token alone (valid 15
        minutes), so any process can answer an interaction another one received; the same
        webhook `Interaction.followup` makes."""
        data: Any = {"id": application_id, "type": 3, "token": token}
        return discord.Webhook.from_state(data=data, state=self._connection)
