"""One agent backend per distinct configuration, picked per turn by what the bindings chose.

The registry is the manager's runtime when a bindings file is set: each turn's
`TurnContext.agent` (an `AgentChoice`, empty fields meaning the defaults) names its backend. A
backend is built once per distinct (agent, assistant, model, system prompt) and reused; a choice
equal to the defaults is the default backend itself. One that cannot be built, or whose last run
failed on its agent (a remote server down), is reported by `problems()` for `/readyz`; its
conversations get the usual error with a reference id while every other binding keeps working.

With a `policy` (`agent.backends.policy`), an agent the operator's config does not name is
checked against it before it is built (a `python:` one not allowed, or a server on a host not
approved, is broken), and a `python:` one is loaded in a probe interpreter first, so rules stored
over HTTP cannot run code the operator did not allow or end the worker that builds them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable

import structlog

from agent.backends.base import AgentBackend
from agent.backends.policy import AgentPolicy
from agent.backends.probe import probe_graph
from agent.result import Question, TurnContext, TurnResult
from switchboard.agent_choice import AgentChoice
from switchboard.errors import AgentError, ConfigError, StorageError

__all__ = ["AgentRegistry", "BuildBackend", "describe_choice"]

_log = structlog.get_logger(__name__)

BuildBackend = Callable[[AgentChoice], Awaitable[AgentBackend]]
"""Build the backend for a complete choice (every field filled in); raises ConfigError."""


def describe_choice(choice: AgentChoice) -> str:
    """A choice as operators read it, without credentials or the system prompt."""
    return choice.describe()


class AgentRegistry:
    """Satisfies `AgentBackend`: the default backend, and one per other choice on demand."""

    def __init__(
        self,
        *,
        default: AgentBackend,
        default_choice: AgentChoice,
        build: BuildBackend,
        policy: AgentPolicy | None = None,
    ) -> None:
        self._default = default
        self._policy = policy
        self._default_choice = default_choice
        self._build = build
        self._built: dict[AgentChoice, AgentBackend] = {}
        self._broken: dict[AgentChoice, str] = {}  # could not be built: why
        self._failing: dict[AgentChoice, str] = {}  # last run failed on the agent: why
        self._building: dict[AgentChoice, asyncio.Lock] = {}

    @property
    def default(self) -> AgentBackend:
        return self._default

    @property
    def kind(self) -> str:
        return self._default.kind

    @property
    def steers(self) -> bool:
        return self._default.steers

    def tool_names(self) -> tuple[str, ...]:
        return self._default.tool_names()

    def complete(self, choice: AgentChoice | None) -> AgentChoice:
        return (choice or AgentChoice()).over(self._default_choice)

    async def prepare(self, choices: Iterable[AgentChoice]) -> None:
        """Build every choice a bindings file names, so a bad one is known (and named in
        `/readyz`) at start rather than at its first message. Never raises."""
        for choice in {self.complete(c) for c in choices}:
            with contextlib.suppress(AgentError):  # recorded in `_broken`
                await self._backend(choice)

    def problems(self) -> dict[str, str]:
        """Agents that cannot answer now: description -> reason (no credentials)."""
        out = {describe_choice(c): why for c, why in self._broken.items()}
        out.update({describe_choice(c): why for c, why in self._failing.items()})
        return out

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult:
        choice = self.complete(context.agent)
        backend = await self._backend(choice)
        return await self._watched(choice, backend.run_turn(thread_id, text, context))

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult:
        choice = self.complete(context.agent)
        backend = await self._backend(choice)
        return await self._watched(choice, backend.resume(thread_id, answer, context))

    async def pending_question(self, thread_id: str) -> Question | None:
        return await self._default.pending_question(thread_id)

    async def aclose(self) -> None:
        """Close the backends built here; the default one belongs to whoever built it."""
        for backend in self._built.values():
            try:
                await backend.aclose()
            except Exception as exc:
                _log.warning("agent.close_failed", error=type(exc).__name__)
        self._built.clear()

    async def _watched(self, choice: AgentChoice, run: Awaitable[TurnResult]) -> TurnResult:
        """Remember whether the choice's agent answers: a failure of the agent itself (not of
        Redis) names it in `problems()` until a run succeeds again."""
        try:
            result = await run
        except AgentError as exc:
            self._failing[choice] = str(exc)
            raise
        if self._failing.pop(choice, None) is not None:
            _log.info("agent.recovered", agent=describe_choice(choice))
        return result

    async def _backend(self, choice: AgentChoice) -> AgentBackend:
        if choice == self._default_choice:
            return self._default
        built = self._built.get(choice)
        if built is not None:
            return built
        lock = self._building.setdefault(choice, asyncio.Lock())
        async with lock:
            built = self._built.get(choice)
            if built is not None:
                return built
            try:
                await self._admit(choice)
                built = await self._build(choice)
            except (StorageError, KeyboardInterrupt, asyncio.CancelledError):
                raise
            except BaseException as exc:  # SystemExit too: one agent must not end the worker
                reason = str(exc) if isinstance(exc, ConfigError) else type(exc).__name__
                self._broken[choice] = reason
                _log.error("agent.build_failed", agent=describe_choice(choice), error=reason)
                raise AgentError(f"the agent {describe_choice(choice)} is unavailable") from None
            self._broken.pop(choice, None)
            self._built[choice] = built
            _log.info("agent.built", agent=describe_choice(choice), kind=built.kind)
            return built

    async def _admit(self, choice: AgentChoice) -> None:
        """Raise `AgentRefused` for an agent the policy does not allow or that fails its probe."""
        if self._policy is None:
            return
        self._policy.check(choice.agent)
        if self._policy.needs_probe(choice.agent):
            await probe_graph(choice.agent.strip().removeprefix("python:"))
