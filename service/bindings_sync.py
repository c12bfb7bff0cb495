"""Keep every process on the fleet's bindings: the rules in force live in Redis
(`storage.BindingsStore`); a change (a `SIGHUP` re-reading the file, `PUT
/api/admin/bindings`) is stored there and every process takes it within `POLL_S`.

Polling costs one HGET every `POLL_S` per process, never anything per turn. Rules that came
from the file name the operator's own agents (`AgentPolicy.file_agents`); rules from the admin
API are held to the policy (`PUT` refuses, the registry will not build what it forbids). A stored document
that this release cannot read (rules from a newer release, say) is logged and skipped: the
process keeps the rules it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

from agent import AgentBackend
from agent.backends import AgentPolicy, AgentRegistry
from channels.bindings import BindingResolver, Bindings, BindingsError, load_bindings
from channels.bindings import parse_bindings as parse_rules
from service.agent_routing import (
    account_lookup,
    agent_policy,
    default_choice,
    file_agents,
    rule_choices,
)
from service.settings import Settings
from storage import BindingsStore, Links, StoredBindings
from switchboard.agent_choice import AgentChoice
from switchboard.errors import StorageError

__all__ = ["POLL_S", "BindingsSync", "stored_doc", "wire_bindings"]

_log = structlog.get_logger(__name__)

POLL_S = 2.0  # how soon a change reaches every process
API_ORIGIN = "admin API"


def stored_doc(bindings: Bindings) -> str:
    return json.dumps(bindings.to_doc(), ensure_ascii=False, separators=(",", ":"))


class BindingsSync:
    def __init__(
        self,
        *,
        store: BindingsStore,
        resolver: BindingResolver,
        registry: AgentRegistry,
        path: Path,
        build_agents: bool = True,
        poll_s: float = POLL_S,
        policy: AgentPolicy | None = None,
    ) -> None:
        self.policy = policy or AgentPolicy()  # what agents the admin API may name
        self._store = store
        self._resolver = resolver
        self._registry = registry
        self._path = path
        self._build_agents = build_agents
        self._poll_s = poll_s
        self._version = 0
        self._task: asyncio.Task[None] | None = None
        self._side: set[asyncio.Task[None]] = set()
        self._closing = False  # the poll ends on it too: Python 3.11 can drop a cancellation

    @property
    def version(self) -> int:
        return self._version

    @property
    def current(self) -> Bindings:
        """The rules this process applies now."""
        return self._resolver.bindings

    async def adopt_file(self, bindings: Bindings) -> Bindings:
        """At start: offer the file's rules to the fleet; the rules in force afterwards."""
        stored = await self._store.adopt(
            stored_doc(bindings), origin=f"file {self._path}", file_digest=bindings.digest
        )
        taken = self._parse(stored) or bindings
        self._version = stored.version
        return taken

    async def start(self) -> None:
        self._task = asyncio.create_task(self._poll(), name="bindings-sync")

    async def aclose(self) -> None:
        self._closing = True
        for task in (self._task, *self._side):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def reload_file(self) -> bool:
        """`SIGHUP`: read the file again; valid rules go to the fleet, a bad file changes
        nothing (each problem is logged on its own line)."""
        try:
            bindings = load_bindings(self._path)
        except BindingsError as exc:
            for problem in exc.problems:
                _log.error("bindings.reload_refused", source=str(self._path), problem=problem)
            return False
        await self.put(bindings, origin=f"file {self._path}", file_digest=bindings.digest)
        return True

    async def put(self, bindings: Bindings, *, origin: str, file_digest: str = "") -> int:
        """Make `bindings` the fleet's rules; this process takes them at once."""
        version = await self._store.put(
            stored_doc(bindings), origin=origin, file_digest=file_digest
        )
        self._apply(bindings, version, origin)
        return version

    async def _poll(self) -> None:
        while not self._closing:
            await asyncio.sleep(self._poll_s)
            try:
                version = await self._store.version()
                if version != self._version:
                    stored = await self._store.read()
                    taken = self._parse(stored) if stored is not None else None
                    if stored is not None:
                        self._version = stored.version  # a bad document is not retried
                    if taken is not None and stored is not None:
                        self._apply(taken, stored.version, stored.origin)
            except StorageError as exc:
                _log.warning("bindings.poll_failed", error=str(exc))

    def _parse(self, stored: StoredBindings) -> Bindings | None:
        try:
            return parse_rules(stored.doc, source=stored.origin, json_only=True)
        except BindingsError as exc:
            _log.error("bindings.stored_unreadable", version=stored.version, problems=exc.problems)
            return None

    def _apply(self, bindings: Bindings, version: int, origin: str) -> None:
        self._version = max(self._version, version)
        if origin != API_ORIGIN:  # the operator's file (here or on another process): its agents
            self.policy.file_agents(file_agents(bindings))
        self._resolver.replace(bindings)
        _log.info("bindings.reloaded", version=version, origin=origin, rules=len(bindings.rules))
        if self._build_agents:  # new agents are built beside the turns, never in their way
            task = asyncio.create_task(self._registry.prepare(rule_choices(bindings)))
            self._side.add(task)
            task.add_done_callback(self._side.discard)


async def wire_bindings(
    bindings: Bindings,
    *,
    settings: Settings,
    default: AgentBackend,
    build: Callable[[AgentChoice], Awaitable[AgentBackend]],
    links: Links,
    store: BindingsStore,
) -> tuple[AgentRegistry, BindingResolver, BindingsSync]:
    """The registry the manager runs turns on, the resolver it asks per conversation, and the
    sync that keeps the rules equal to the fleet's (started; close it). The file is offered to
    the fleet first (`BindingsSync.adopt_file`). A worker builds every agent the rules name now,
    so a broken one is named in `/readyz` from the start; it is not fatal (its conversations
    get an error with a reference id). An agent the file does not name is held to
    `agent_policy` first, the rules stored over HTTP included."""
    policy = agent_policy(settings, bindings)
    registry = AgentRegistry(
        default=default, default_choice=default_choice(settings), build=build, policy=policy
    )
    resolver = BindingResolver(bindings, account_of=account_lookup(links))
    assert settings.bindings is not None
    worker = settings.role != "ingress"
    sync = BindingsSync(
        store=store,
        resolver=resolver,
        registry=registry,
        path=settings.bindings,
        build_agents=worker,
        policy=policy,
    )
    resolver.replace(await sync.adopt_file(bindings))
    if worker:
        await registry.prepare(rule_choices(resolver.bindings))
    await sync.start()
    return registry, resolver, sync
