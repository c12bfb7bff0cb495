"""The Discord gateway sessions: the adapter's own client and one client per shard, opened,
run (restarted with backoff after a failure), closed; the read gate and the count of events
waiting for the inbox; who the bot is; the application commands' registration on open.

A mixin (`GatewaySessions`) of `DiscordAdapter` rather than a class the adapter owns: the
sessions' clients are what every other part reads and sends through (inbound, reactions,
outbound), the clients are built with the inbound handlers, and the stop flag, the read gate and
the tracked tasks are shared by all of them; splitting that state across owned objects would
mean handing most of it to each. The state is set in `DiscordAdapter.__init__`.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import discord
import structlog
from discord import app_commands

from channels.adapter import Deliver, ExclusiveReceiver
from channels.commands import CommandSpec
from channels.discord.client import SwitchboardClient
from channels.discord.commands import build_tree, local_commands, needs_sync
from channels.discord.errors import translated
from channels.discord.events import BotIdentity
from channels.message import Platform
from channels.metrics import INGRESS_PAUSES, INGRESS_WAITING
from switchboard.errors import PlatformAuthError, PlatformError

__all__ = ["INTENTS", "MAX_WAITING", "VOTE_INTENTS", "DiscordShard", "GatewaySessions"]

INTENTS = discord.Intents(guilds=True, guild_messages=True, dm_messages=True, message_content=True)
VOTE_INTENTS = discord.Intents(guild_reactions=True, dm_reactions=True)  # with votes on: 👍/👎

MAX_WAITING = 256  # events read but not yet taken by the inbox before the gateway is paused

_PLATFORM = str(Platform.DISCORD)
_RESTART_MIN_S = 1.0  # first pause before restarting a gateway that died; doubles each time
_RESTART_MAX_S = 60.0

_log = structlog.get_logger(__name__)


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


class _ShardHost(Protocol):
    """What a shard needs of the adapter: its lease's name and its shards' sessions."""

    @property
    def connection_name(self) -> str: ...

    async def open_shard(self, shard_id: int) -> None: ...

    async def close_shard(self, shard_id: int) -> None: ...


class DiscordShard:
    """One shard's gateway session as an `ExclusiveReceiver`: opened while this process holds
    the shard's lease; sends always go through the adapter's own client."""

    def __init__(self, adapter: _ShardHost, shard_id: int, shard_count: int) -> None:
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


class GatewaySessions:
    """The gateway half of `DiscordAdapter`: sessions in, the read gate, who we are."""

    # The adapter's state, set in `DiscordAdapter.__init__` and shared by its parts.
    _token: str
    _deliver: Deliver
    _api_base: str
    _gateway_url: str | None
    _guild_ready_timeout: float
    _start_timeout: float
    _heartbeat_timeout: float
    _shard_count: int
    _votes: bool
    _command_guilds: tuple[int, ...]
    _max_waiting: int
    _waiting: int
    _read_gate: asyncio.Event
    _ready: asyncio.Event
    _logged_in: bool
    _client: SwitchboardClient
    _main: _Gateway
    _sessions: dict[int, _Gateway]
    _shards: tuple[ExclusiveReceiver, ...]
    _tasks: set[asyncio.Task[None]]
    _stopped: bool

    if TYPE_CHECKING:  # the handlers each client is built with (inbound.py, reactions.py)

        def _on_message_payload(self, payload: dict[str, Any]) -> None: ...
        def _on_press(self, interaction: discord.Interaction) -> None: ...
        def _on_foreign_press(self, interaction: discord.Interaction) -> None: ...
        def _on_reaction(self, payload: dict[str, Any]) -> None: ...
        async def _on_app_command(
            self, interaction: discord.Interaction, spec: CommandSpec
        ) -> None: ...
        async def _on_tree_error(
            self, interaction: discord.Interaction, error: app_commands.AppCommandError
        ) -> None: ...

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

    def _identity(self) -> BotIdentity:
        """Who we are, also in a worker's send-only client (logged in over HTTP, no READY)."""
        user = self._client.user
        if user is not None:
            return BotIdentity(id=str(user.id), name=user.name)
        return BotIdentity(id=str(self._client.application_id or ""))

    def _clients(self) -> list[SwitchboardClient]:
        """Whose caches know guilds, channels and threads: ours, and each open shard's."""
        return [self._client, *(g.client for g in self._sessions.values())]

    def _channel(self, channel_id: str) -> Any:
        for client in self._clients():
            channel = client.get_channel(int(channel_id))
            if channel is not None:
                return channel
        return None

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
