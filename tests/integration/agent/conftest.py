"""Agent fixtures: the real runtime on the Redis checkpoint saver, with the scripted model.

`ModelRequests` is a langchain callback handler attached to the model: it records every request
the model receives (the messages, as the model saw them, and the run's metadata), which is how the
tests see what the loop-detection middleware injected without touching graph state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest
import redis.asyncio as aioredis
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI

from agent import AgentRuntime, DemoChatModel, build_model
from storage import Keys, PendingWarnings
from storage.checkpoint import RedisCheckpointSaver
from tests.fakes.openai_server import API_KEY, FakeOpenAI

__all__ = ["ModelRequest", "ModelRequests", "openai_model"]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    messages: list[BaseMessage]
    metadata: dict[str, Any]
    tags: list[str]

    @property
    def thread_id(self) -> str:
        return str(self.metadata.get("thread_id", ""))

    @property
    def run_id(self) -> str:
        return str(self.metadata.get("run_id", ""))

    def warnings(self) -> list[BaseMessage]:
        return [m for m in self.messages if m.type == "human" and m.name == "loop_warning"]


@dataclass
class ModelRequests(BaseCallbackHandler):
    run_inline: bool = True
    seen: list[ModelRequest] = field(default_factory=list)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.seen.append(ModelRequest(list(messages[0]), dict(metadata or {}), list(tags or [])))

    def of_run(self, run_id: str) -> list[ModelRequest]:
        return [r for r in self.seen if r.run_id == run_id]

    def of_thread(self, thread_id: str) -> list[ModelRequest]:
        return [r for r in self.seen if r.thread_id == thread_id]


@pytest.fixture
def requests_seen() -> ModelRequests:
    return ModelRequests()


@pytest.fixture
def warnings(redis: aioredis.Redis, keys: Keys) -> PendingWarnings:
    return PendingWarnings(redis, keys=keys)


@pytest.fixture
def make_runtime(
    redis: aioredis.Redis, prefix: str, warnings: PendingWarnings, requests_seen: ModelRequests
) -> Callable[..., AgentRuntime]:
    """A runtime over a NEW saver instance each call (a fresh one is a restarted process)."""

    def make(**overrides: Any) -> AgentRuntime:
        options: dict[str, Any] = {
            "model": DemoChatModel(callbacks=[requests_seen]),
            "checkpointer": RedisCheckpointSaver(redis, prefix=prefix),
            "warnings": warnings,
            "system_prompt": "You are a test agent.",
        }
        options.update(overrides)
        return AgentRuntime(**options)

    return make


@pytest.fixture
def runtime(make_runtime: Callable[..., AgentRuntime]) -> AgentRuntime:
    return make_runtime()


@pytest.fixture
def fake_openai(openai_server: object) -> FakeOpenAI:
    """The loopback fake OpenAI-compatible server (`openai_server`), typed for the agent tests."""
    assert isinstance(openai_server, FakeOpenAI)
    return openai_server


def openai_model(server: FakeOpenAI, key: str = API_KEY) -> ChatOpenAI:
    """`openai:gpt-4o-mini` as `build_model` makes it for the service, against the fake."""
    model = build_model(
        "openai:gpt-4o-mini",
        openai_base_url=server.base_url,
        openai_api_key=key,
        anthropic_api_key=None,
    )
    assert isinstance(model, ChatOpenAI)
    return model
