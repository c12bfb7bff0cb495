"""The agent registry: one backend per distinct configuration, built once even when its first
turns arrive together; the default configuration is the default backend; an agent that cannot
be built or whose runs fail is named until it answers again, and never stops the others."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from agent.backends import AgentRegistry
from agent.result import Question, TurnContext, TurnResult
from switchboard.agent_choice import AgentChoice
from switchboard.errors import AgentError, ConfigError

DEFAULT = AgentChoice("builtin", "agent", "demo", "be helpful")


@dataclass
class EchoBackend:
    """A backend that says which configuration answered (the registry only routes)."""

    name: str
    failing: bool = False
    closed: bool = False
    turns: list[str] = field(default_factory=list)
    steers: bool = True

    @property
    def kind(self) -> str:
        return "builtin"

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult:
        if self.failing:
            raise AgentError("server unreachable")
        self.turns.append(text)
        return TurnResult(reply_text=f"{self.name}: {text}", run_id="r")

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult:
        return await self.run_turn(thread_id, answer, context)

    async def pending_question(self, thread_id: str) -> Question | None:
        return None

    def tool_names(self) -> tuple[str, ...]:
        return ()

    async def aclose(self) -> None:
        self.closed = True


def _registry() -> tuple[AgentRegistry, list[AgentChoice], dict[str, EchoBackend]]:
    builds: list[AgentChoice] = []
    made: dict[str, EchoBackend] = {}

    async def build(choice: AgentChoice) -> EchoBackend:
        builds.append(choice)
        await asyncio.sleep(0)  # a real build awaits (imports, MCP servers)
        if choice.agent.startswith("python:missing"):
            raise ConfigError("cannot import missing")
        made[choice.model] = EchoBackend(choice.model)
        return made[choice.model]

    registry = AgentRegistry(default=EchoBackend("default"), default_choice=DEFAULT, build=build)
    return registry, builds, made


def _ctx(choice: AgentChoice | None) -> TurnContext:
    return TurnContext(user_id="U1", agent=choice)


async def test_each_distinct_configuration_is_built_once_and_reused() -> None:
    registry, builds, _ = _registry()
    mini = AgentChoice(model="openai:mini")
    results = await asyncio.gather(
        *(registry.run_turn(f"t{i}", "hi", _ctx(mini)) for i in range(5)),
        registry.run_turn("t9", "hi", _ctx(AgentChoice(model="openai:big"))),
    )
    assert [r.reply_text for r in results] == ["openai:mini: hi"] * 5 + ["openai:big: hi"]
    assert builds == [
        AgentChoice("builtin", "agent", "openai:mini", "be helpful"),
        AgentChoice("builtin", "agent", "openai:big", "be helpful"),
    ]


async def test_the_default_configuration_is_the_default_backend() -> None:
    registry, builds, _ = _registry()
    for choice in (None, AgentChoice(), AgentChoice(model="demo")):
        assert (await registry.run_turn("t", "x", _ctx(choice))).reply_text == "default: x"
    assert builds == []


async def test_a_broken_agent_is_named_and_fails_only_its_own_turns() -> None:
    registry, _, made = _registry()
    broken = AgentChoice(agent="python:missing.module:graph")
    await registry.prepare([broken, AgentChoice(model="openai:mini")])
    assert registry.problems() == {"python:missing.module:graph": "cannot import missing"}
    with pytest.raises(AgentError, match="unavailable"):
        await registry.run_turn("t", "x", _ctx(broken))
    mini = AgentChoice(model="openai:mini")
    assert (await registry.run_turn("t", "x", _ctx(mini))).reply_text == "openai:mini: x"
    made["openai:mini"].failing = True
    with pytest.raises(AgentError):
        await registry.run_turn("t", "x", _ctx(mini))
    assert "builtin openai:mini" in registry.problems()
    made["openai:mini"].failing = False
    await registry.run_turn("t", "x", _ctx(mini))
    assert "builtin openai:mini" not in registry.problems()


async def test_a_remote_agent_is_described_without_its_credentials() -> None:
    choice = AgentChoice("https://bot:s3cret@agents.example:8443/x", "support", "", "")
    assert choice.describe() == "remote https://agents.example:8443 (support)"


async def test_closing_closes_what_it_built_but_not_the_default() -> None:
    registry, _, made = _registry()
    await registry.run_turn("t", "x", _ctx(AgentChoice(model="openai:mini")))
    await registry.aclose()
    assert made["openai:mini"].closed and not registry.default.closed  # type: ignore[attr-defined]
