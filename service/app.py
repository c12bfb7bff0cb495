"""The composition root: Redis → storage → agent → manager → adapters → HTTP, in one exit stack.

Everything is built once per process and closed in reverse order. Tests build the same core with
`build_core` so they exercise the production wiring.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis.asyncio as redis
import structlog

from agent import (
    AgentBackend,
    BuiltinAgent,
    McpConfigFile,
    ModelPrice,
    build_agent_backend,
    build_model,
    build_transcriber,
    langsmith_votes,
    parse_agent_spec,
    prepare_files_dir,
    spans_inline_when_untraced,
    tracing_from_env,
)
from agent.backends import AgentRegistry
from agent.decode_pool import DecodeLimits
from agent.decode_pool import configure as configure_decoding
from channels import (
    AccessGate,
    Adapter,
    Manager,
    ManagerConfig,
    ManagerStores,
    ReportsHealth,
)
from channels.adapter import ExclusiveReceiver
from channels.bindings import BindingResolver, PlacePolicies, PolicyFor
from channels.ownership import ConnectionOwner, FairShare, ShardedReceiver, exclusive_parts
from channels.usage import Budget, UsageDesk
from service.agent_routing import default_choice, load_configured_bindings
from service.heap import freeze_startup_heap
from service.settings import Settings
from storage import (
    Accounts,
    Admission,
    BindingsStore,
    ConsoleSessions,
    ContextRecords,
    Dedupe,
    FailureLog,
    FeedbackStore,
    Inbox,
    Keys,
    Leases,
    Links,
    Orphans,
    PendingQuestions,
    PendingWarnings,
    RateLimiter,
    RedisCheckpointSaver,
    RemoteThreads,
    SendWindows,
    ThreadLocks,
    ThreadMap,
    ThreadQueue,
    UsageLedger,
    maxmemory_policy,
    open_redis,
    warn_if_unauthenticated,
)
from switchboard.agent_choice import AgentChoice
from switchboard.errors import ConfigError
from switchboard.state import BusyMode

if TYPE_CHECKING:
    from service.bindings_sync import BindingsSync
    from service.console import ConsoleSources

__all__ = [
    "Core",
    "build_adapters",
    "build_core",
    "build_usage_desk",
    "place_policies",
    "running_service",
]

_log = structlog.get_logger(__name__)

WebhookHandler = Callable[[Any], Awaitable[Any]]
DRAIN_TIMEOUT_S = 20.0  # a shutdown waits this long for turns in flight to reply
_EVICTION_WARNING = (
    "Redis maxmemory-policy is {policy}: under memory pressure Redis may evict locks, queues and "
    "dedupe marks; set it to noeviction"
)


@dataclass(slots=True)
class Core:
    settings: Settings
    redis: redis.Redis
    keys: Keys
    runtime: AgentBackend
    manager: Manager
    accounts: Accounts
    links: Links
    adapters: list[Adapter] = field(default_factory=list)
    http_port: int | None = None
    usage: UsageDesk | None = None
    mcp_file: McpConfigFile | None = None  # SWITCHBOARD_MCP_CONFIG, edited by the admin API
    owners: list[ConnectionOwner] = field(default_factory=list)
    redis_policy: str | None = "noeviction"  # read at start; None: CONFIG GET was denied
    agents: AgentRegistry | None = None  # with bindings: one agent per configuration they name
    bindings: BindingResolver | None = None  # with bindings: the rules in force
    bindings_sync: BindingsSync | None = None  # with bindings: follows the fleet's rules

    def status(self) -> dict[str, object]:
        """For `/readyz`: this process's role and the exclusive connections it holds, and a
        Redis that may evict our keys (or whose policy could not be read)."""
        details: dict[str, object] = {
            "role": self.settings.role,
            "leases": sorted(o.name for o in self.owners if o.owner),
        }
        if self.redis_policy != "noeviction":
            details["redis_maxmemory_policy"] = self.redis_policy or "unknown"
        if self.redis_policy not in (None, "noeviction"):
            details["warnings"] = [_EVICTION_WARNING.format(policy=self.redis_policy)]
        problems = self.agents.problems() if self.agents is not None else {}
        if problems:  # a binding's agent that cannot answer; the others still do
            details["agents_unavailable"] = problems
        return details


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None


@contextlib.asynccontextmanager
async def build_core(
    settings: Settings, client: redis.Redis, *, start_intake: bool = True
) -> AsyncIterator[Core]:
    bindings = load_configured_bindings(settings)  # a bad file stops start-up first
    keys = Keys(settings.redis_prefix)
    ttl_s = settings.thread_ttl_days * 24 * 3600
    dedupe = Dedupe(client, keys=keys)
    rate = RateLimiter(client, keys=keys, limit=settings.rate_limit_per_minute, window_s=60.0)
    threads = ThreadMap(client, keys=keys, ttl_s=ttl_s)
    checkpointer = RedisCheckpointSaver(
        client,
        prefix=settings.redis_prefix,
        ttl_s=settings.checkpoint_ttl_days * 24 * 3600 if settings.checkpoint_ttl_days else None,
        keep=settings.checkpoints_keep,
    )
    default_spec = parse_agent_spec(default_choice(settings).agent)
    stores = ManagerStores(
        inbox=Inbox(
            client,
            keys=keys,
            claim_idle_s=settings.lock_ttl_s,
            shards=settings.inbox_shard_count,
            min_replicas=settings.redis_min_replicas_ack,
            replicas_timeout_ms=settings.redis_min_replicas_timeout_ms,
        ),
        dedupe=dedupe,
        threads=threads,
        locks=ThreadLocks(client, keys=keys),
        queue=ThreadQueue(
            client,
            keys=keys,
            lock_ttl_s=settings.lock_ttl_s,
            # the run's first read goes with the submit, unless the agent keeps no checkpoints here
            checkpoints=None if default_spec.kind == "remote" else checkpointer,
        ),
        orphans=Orphans(
            client,
            keys=keys,
            grace_s=settings.lock_ttl_s * 1.2,
            shards=settings.inbox_shard_count,
        ),
        questions=PendingQuestions(client, keys=keys),
        rate=rate,
        admission=Admission(client, dedupe=dedupe, rate=rate, threads=threads),
        context=ContextRecords(client, keys=keys, mark_ttl_s=ttl_s),
        failures=FailureLog(client, keys=keys),
        feedback=FeedbackStore(client, keys=keys) if settings.feedback == "on" else None,
    )
    tracing = tracing_from_env(env_name=settings.env_name, model_spec=settings.model)
    spans_inline_when_untraced(tracing)
    mcp_file = McpConfigFile(settings.mcp_config) if settings.mcp_config else None
    # Only processes that run turns read outbound files; an ingress never touches the directory.
    files_dir = prepare_files_dir(settings.data_dir) if settings.role != "ingress" else None
    configure_decoding(  # the bounds of this worker's decode children, started on a first file
        DecodeLimits(
            workers=settings.decode_workers,
            memory_bytes=settings.decode_memory_mb * 1024 * 1024,
            cpu_s=settings.decode_cpu_s,
        )
    )

    async def build_for(choice: AgentChoice) -> AgentBackend:
        """The backend for one agent configuration (the default, or a binding's)."""
        return await build_agent_backend(
            parse_agent_spec(choice.agent),
            model=lambda: build_model(
                choice.model,
                openai_base_url=settings.openai_base_url,
                openai_api_key=_secret(settings.openai_api_key),
                anthropic_api_key=_secret(settings.anthropic_api_key),
            ),
            checkpointer=checkpointer,
            warnings=PendingWarnings(client, keys=keys),
            remote_threads=RemoteThreads(client, keys=keys, ttl_s=ttl_s),
            system_prompt=choice.system_prompt,
            assistant=choice.assistant,
            recursion_limit=settings.recursion_limit,
            tracing=tracing,
            clear_stale_warnings=False,  # ThreadQueue drops them with the thread lock
            price=_price(settings),
            mcp_config=mcp_file.read() if mcp_file is not None else None,
            transcriber=build_transcriber(
                settings.transcribe_model,
                openai_base_url=settings.openai_base_url,
                openai_api_key=_secret(settings.openai_api_key),
                max_seconds=settings.max_audio_seconds,
            ),
            files_dir=files_dir,
            data_dir=settings.data_dir,  # no python: agent is loaded from there
            remote_api_keys=settings.agent_api_key_vars,  # the only keys a remote agent gets
            max_image_pixels=settings.max_image_pixels,
            history_tokens=settings.history_tokens,
            summary_model=functools.partial(
                build_model,
                settings.summary_model,
                openai_base_url=settings.openai_base_url,
                openai_api_key=_secret(settings.openai_api_key),
                anthropic_api_key=_secret(settings.anthropic_api_key),
            )
            if settings.summary_model
            else None,
        )

    runtime = await build_for(default_choice(settings))
    if settings.busy == "steer" and not runtime.steers:
        _log.warning(
            "agent.steer_unavailable",
            backend=runtime.kind,
            detail="this agent cannot take messages mid-run: SWITCHBOARD_BUSY=steer works as queue",
        )
    usage = build_usage_desk(settings, client, keys)
    # votes go to LangSmith as run feedback when turns are traced there
    votes_out = langsmith_votes(os.environ) if settings.feedback == "on" else None
    accounts = Accounts(client, keys=keys)
    links = Links(client, keys=keys)
    agents, resolver, sync = None, None, None
    if bindings is not None:
        from service.bindings_sync import wire_bindings  # loaded only with bindings

        agents, resolver, sync = await wire_bindings(
            bindings,
            settings=settings,
            default=runtime,
            build=build_for,
            links=links,
            store=BindingsStore(client, keys=keys),
        )
    access = AccessGate(
        links=links, redis=client, keys=keys, mode=settings.access, public_url=settings.public_url
    )
    manager = Manager(
        runtime=agents or runtime,
        stores=stores,
        access=access,
        config=ManagerConfig(
            busy=BusyMode(settings.busy),
            collect_s=settings.collect_ms / 1000,
            model_name=settings.model,
            agent=default_choice(settings),
            max_input_chars=settings.max_input_chars,
            max_concurrent_turns=settings.max_concurrent_turns,
            sweep_every_s=min(2.0, settings.lock_ttl_s / 2),
            max_attempts=settings.max_attempts,
            queue_max_age_s=settings.queue_max_age_s,
            lock_ttl_s=settings.lock_ttl_s,
            streaming=settings.streaming == "on",
            max_streams=settings.max_streams,
            max_attachment_bytes=int(settings.max_attachment_mb * 1024 * 1024),
            context_messages=settings.context_messages,
            context_chars=settings.context_chars,
            observe_keep=settings.telegram_observe,
            command_prefix=settings.command_prefix,
            slack_command=settings.slack_command,
            feedback=settings.feedback == "on",
        ),
        usage=usage,
        on_vote=votes_out,
        bindings=resolver,
    )
    core = Core(
        settings, client, keys, runtime, manager, accounts, links, usage=usage, mcp_file=mcp_file
    )
    core.agents, core.bindings, core.bindings_sync = agents, resolver, sync
    if settings.role == "ingress":
        await stores.inbox.ensure_group()  # announces its shard count: workers drain it
    if start_intake and settings.role != "ingress":
        await manager.start()
    try:
        yield core
    finally:
        await manager.aclose()
        if sync is not None:
            await sync.aclose()
        if agents is not None:
            await agents.aclose()
        await runtime.aclose()
        if votes_out is not None:
            await votes_out.aclose()


def _price(settings: Settings) -> ModelPrice | None:
    pair = settings.price_per_million
    return ModelPrice(*pair) if pair is not None else None


def build_usage_desk(settings: Settings, client: redis.Redis, keys: Keys) -> UsageDesk:
    """Budgets from settings; says at start-up when a budget is set that no price backs."""
    budget = Budget.from_usd(settings.budget_daily_usd, settings.budget_weekly_usd)
    if budget.enabled and settings.price_per_million is None:
        _log.warning(
            "usage.budget_without_price",
            hint="SWITCHBOARD_BUDGET_* is set but SWITCHBOARD_MODEL_PRICE is not: only turns "
            "whose provider reports a cost count against budgets",
        )
    return UsageDesk(ledger=UsageLedger(client, keys=keys), budget=budget)


def _slack_prompts(settings: Settings) -> dict[str, Any]:
    """`SWITCHBOARD_SLACK_PROMPTS` for the Slack adapter, when set (else its own prompts)."""
    from channels.slack.assistant import Prompt

    pairs = settings.slack_prompt_pairs
    return {} if pairs is None else {"prompts": tuple(Prompt(t, m) for t, m in pairs)}


def build_adapters(
    settings: Settings,
    manager: Manager,
    *,
    client: redis.Redis | None = None,
    policy: PolicyFor | None = None,
) -> list[Adapter]:
    """One adapter per platform whose token is set; imports stay lazy so unused SDKs cost nothing.
    With `client`, each platform's send limits are counted by the whole fleet in Redis; with
    `policy` (bindings), places may answer without a mention or take other bots' messages."""
    adapters: list[Adapter] = []
    if settings.telegram_enabled:
        from channels.pacing import SharedTelegramPacer
        from channels.telegram import TelegramAdapter

        if settings.telegram_mode == "webhook" and settings.telegram_webhook_secret is None:
            raise ConfigError("invalid setting TELEGRAM_WEBHOOK_SECRET: required in webhook mode")
        adapters.append(
            TelegramAdapter(
                token=_secret(settings.telegram_bot_token) or "",
                deliver=manager.deliver,
                api_base=settings.telegram_api_base,
                mode=settings.telegram_mode,
                webhook_url=f"{settings.public_url.rstrip('/')}/telegram/webhook",
                webhook_secret=_secret(settings.telegram_webhook_secret),
                pacer=_shared_pacer(
                    settings, client, SharedTelegramPacer, _telegram_owner(settings)
                ),
                observe=settings.telegram_observe > 0,
                votes=settings.feedback == "on",
                policy=policy,
            )
        )
    if settings.slack_enabled:
        from channels.pacing import SharedPacer
        from channels.slack import SlackAdapter

        slack_token = _secret(settings.slack_bot_token) or ""
        adapters.append(
            SlackAdapter(
                bot_token=slack_token,
                deliver=manager.deliver,
                app_token=_secret(settings.slack_app_token),
                signing_secret=_secret(settings.slack_signing_secret),
                api_base=settings.slack_api_base,
                command=settings.slack_command,
                pacer=_shared_pacer(settings, client, SharedPacer, f"slack:{_digest(slack_token)}"),
                **_slack_prompts(settings),
                policy=policy,
            )
        )
    if settings.discord_enabled:
        from channels.discord import DiscordAdapter
        from channels.pacing import SharedPacer

        discord_token = _secret(settings.discord_bot_token) or ""
        adapters.append(
            DiscordAdapter(
                token=discord_token,
                deliver=manager.deliver,
                api_base=settings.discord_api_base,
                gateway_url=settings.discord_gateway_url,
                shards=settings.discord_shards,
                command_guilds=settings.discord_command_guild_ids,
                policy=policy,
                votes=settings.feedback == "on",
                pacer=_shared_pacer(
                    settings, client, SharedPacer, f"discord:{_digest(discord_token)}"
                ),
            )
        )
    for adapter in adapters:
        manager.register(adapter)
    return adapters


def _shared_pacer(settings: Settings, client: redis.Redis | None, shared: Any, owner: str) -> Any:
    """`shared` (a pacer class of `channels.pacing`) on `owner`'s Redis windows; None (the
    adapter's in-process pacer) without a client."""
    if client is None:
        return None
    return shared(SendWindows(client, keys=Keys(settings.redis_prefix), owner=owner))


def _telegram_owner(settings: Settings) -> str:
    bot_id = (_secret(settings.telegram_bot_token) or "").split(":", 1)[0]
    return f"tg:{bot_id}"


def _digest(token: str) -> str:
    """Names a bot (a Slack app installation, a Discord bot) in key names without its token."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def _webhooks(adapters: list[Adapter]) -> dict[str, WebhookHandler]:
    """Each platform's webhook paths; Slack's slash commands have their own URL in the app's
    manifest, served by the same signed handler as its events."""
    routes = {
        "telegram": ("/telegram/webhook",),
        "slack": ("/slack/events", "/slack/commands"),
    }
    hooks: dict[str, WebhookHandler] = {}
    for adapter in adapters:
        handler = getattr(adapter, "handle_webhook", None)
        for path in routes.get(str(adapter.platform), ()):
            if handler is not None:
                hooks[path] = handler
    return hooks


@contextlib.asynccontextmanager
async def running_service(settings: Settings, *, http: bool = True) -> AsyncIterator[Core]:
    """Redis, core, adapters and the HTTP server, all started; stopped in reverse on exit."""
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            open_redis(
                settings.redis_url,
                settings.data_dir,
                max_connections=settings.redis_max_connections,
                cluster=settings.redis_cluster,
            )
        )
        # The intake starts after the adapters: an entry is only taken by a worker that can
        # answer it (one for a platform not served here is left for a process that serves it).
        core = await stack.enter_async_context(build_core(settings, client, start_intake=False))
        core.redis_policy = await _check_eviction(client)
        if settings.redis_url:
            await warn_if_unauthenticated(client, settings.redis_url)
        if core.bindings_sync is not None:
            _reload_on_hangup(stack, core.bindings_sync)
        core.adapters = build_adapters(
            settings, core.manager, client=client, policy=place_policies(core)
        )
        if http and not core.adapters:
            _log.warning(
                "service.no_channels",
                hint="no chat platform is configured: set TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN, "
                "or SLACK_BOT_TOKEN with SLACK_APP_TOKEN or SLACK_SIGNING_SECRET (see README); "
                "serving HTTP only",
            )
        started: list[Adapter] = []

        async def ready() -> bool:
            try:
                await client.ping()
            except Exception:
                return False
            down = [
                str(a.platform) for a in started if isinstance(a, ReportsHealth) and not a.healthy
            ]
            if down:
                _log.warning("ready.channels_down", channels=down)
            return len(started) == len(core.adapters) and not down

        receive = settings.role != "worker"
        leases = Leases(client, keys=core.keys, ttl_s=settings.lock_ttl_s)
        for adapter in core.adapters:
            parts = exclusive_parts(adapter)
            await adapter.start(receive=receive and not parts)
            stack.push_async_callback(adapter.stop)
            if receive and parts:
                await _own(stack, core, adapter, parts, leases)
            started.append(adapter)
            _log.info("channel.started", platform=str(adapter.platform), receive=receive)

        if settings.role != "ingress":
            await core.manager.start()

        async def drain() -> None:
            """Stop taking inbox entries and let turns in hand finish and reply while the
            adapters can still send; what is left stays in Redis for the next worker."""
            await core.manager.aclose(timeout=DRAIN_TIMEOUT_S)

        # Exit runs in reverse: stop taking webhooks, drain, then stop the adapters.
        stack.push_async_callback(drain)
        if http:
            await _start_http(stack, core, ready)
        _log.info(
            "service.started",
            frozen_objects=freeze_startup_heap(),  # after start-up: see service/heap.py
            event_loop=type(asyncio.get_running_loop()).__module__.split(".")[0],
            http=f"{settings.http_host}:{settings.http_port}",
            channels=[str(a.platform) for a in core.adapters],
            model=settings.model,
            role=settings.role,
        )
        yield core


def _reload_on_hangup(stack: contextlib.AsyncExitStack, sync: BindingsSync) -> None:
    """`kill -HUP` re-reads the bindings file and hands valid rules to the whole fleet."""
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()

    async def reload() -> None:
        try:
            await sync.reload_file()
        except Exception as exc:  # a signal has no caller to tell: log it
            _log.error("bindings.reload_failed", error=str(exc))

    def hangup() -> None:
        task = loop.create_task(reload(), name="bindings-reload")
        pending.add(task)
        task.add_done_callback(pending.discard)

    try:
        loop.add_signal_handler(signal.SIGHUP, hangup)
    except (NotImplementedError, RuntimeError, AttributeError):  # Windows, or not the main thread
        return
    stack.callback(loop.remove_signal_handler, signal.SIGHUP)


def place_policies(core: Core) -> PolicyFor | None:
    """With bindings, what adapters ask on arrival (the rules in force, reloads included)."""
    resolver = core.bindings
    return PlacePolicies(lambda: resolver.bindings) if resolver is not None else None


async def _check_eviction(client: redis.Redis) -> str | None:
    """`maxmemory-policy` at start; anything but noeviction is logged as a warning."""
    policy = await maxmemory_policy(client)
    if policy is not None and policy != "noeviction":
        _log.warning("redis.eviction_policy", policy=policy, hint="set noeviction")
    return policy


async def _own(
    stack: contextlib.AsyncExitStack,
    core: Core,
    adapter: Adapter,
    parts: list[ExclusiveReceiver],
    leases: Leases,
) -> None:
    """One lease owner per exclusive connection; the shards of one adapter share them out
    fairly across the fleet (`FairShare`)."""
    share = None
    if len(parts) > 1:
        group = (
            adapter.connection_name if isinstance(adapter, ShardedReceiver) else adapter.platform
        )
        share = FairShare(leases, str(group), len(parts))
        await share.start()
        stack.push_async_callback(share.stop)
    for part in parts:
        owner = ConnectionOwner(part, leases, share=share)
        await owner.start()
        stack.push_async_callback(owner.stop)
        core.owners.append(owner)


async def _start_http(
    stack: contextlib.AsyncExitStack, core: Core, ready: Callable[[], Awaitable[bool]]
) -> None:
    import uvicorn

    from service.http import build_http_app

    settings = core.settings
    app = build_http_app(
        settings=settings,
        accounts=core.accounts,
        links=core.links,
        ready=ready,
        status=core.status,
        usage=core.usage,
        webhooks=_webhooks(core.adapters) if settings.role != "worker" else {},
        mcp_file=core.mcp_file,
        mcp_agent=core.runtime if isinstance(core.runtime, BuiltinAgent) else None,
        console=_console_sources(core),
        feedback=FeedbackStore(core.redis, keys=core.keys),
        bindings=core.bindings_sync,
    )
    config = uvicorn.Config(
        app,
        host=settings.http_host,
        port=settings.http_port,
        log_config=None,
        access_log=False,
        lifespan="off",
        # X-Forwarded-For only from SWITCHBOARD_TRUSTED_PROXIES (uvicorn trusts 127.0.0.1 by
        # default): the admin lockout counts the address this yields.
        proxy_headers=bool(settings.trusted_proxy_list),
        forwarded_allow_ips=settings.trusted_proxy_list,
    )
    server = uvicorn.Server(config)
    sock = socket.socket(socket.AF_INET6 if ":" in settings.http_host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((settings.http_host, settings.http_port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot serve HTTP on {settings.http_host}:{settings.http_port}: {exc.strerror} "
            "(set SWITCHBOARD_HTTP_PORT)"
        ) from None
    core.http_port = sock.getsockname()[1]
    server_task = asyncio.create_task(server.serve(sockets=[sock]), name="http")
    while not server.started and not server_task.done():  # noqa: ASYNC110 - uvicorn only exposes a flag
        await asyncio.sleep(0.01)

    async def stop_server() -> None:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(server_task, 10)

    stack.push_async_callback(stop_server)


def _console_sources(core: Core) -> ConsoleSources:
    """The operator console reads this process's adapters and leases, and the shared stores."""
    from service.console import ConnectionState, ConsoleSources, LeaseState

    client, keys = core.redis, core.keys
    return ConsoleSources(
        settings=core.settings,
        accounts=core.accounts,
        links=core.links,
        sessions=ConsoleSessions(client, keys=keys),
        failures=FailureLog(client, keys=keys),
        inbox=Inbox(client, keys=keys, shards=core.settings.inbox_shard_count),
        leases=Leases(client, keys=keys, ttl_s=core.settings.lock_ttl_s),
        redis=client,
        threads=ThreadMap(client, keys=keys, ttl_s=core.settings.thread_ttl_days * 24 * 3600),
        queue=ThreadQueue(client, keys=keys, lock_ttl_s=core.settings.lock_ttl_s),
        checkpoints=RedisCheckpointSaver(client, prefix=core.settings.redis_prefix),
        usage=core.usage,
        feedback=FeedbackStore(client, keys=keys) if core.settings.feedback == "on" else None,
        connections=lambda: [
            ConnectionState(str(a.platform), a.healthy if isinstance(a, ReportsHealth) else None)
            for a in core.adapters
        ],
        lease_states=lambda: [LeaseState(o.name, o.owner) for o in core.owners],
        redis_policy=lambda: core.redis_policy,
    )


async def wait_for_signal() -> None:
    """Block until SIGINT or SIGTERM."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
