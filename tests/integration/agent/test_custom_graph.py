"""`SWITCHBOARD_AGENT=python:…`: an operator's own graph, through the production wiring.

Every test builds the core with `service.app.build_core` (real Redis, real manager) and talks to
it through a recording adapter, so the graph is loaded exactly as `switchboard serve` loads it.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from langchain.agents import create_agent

from agent import DemoChatModel, LocalGraphRunner, current_time
from agent.loop_detection import STOPPED_FALLBACK
from channels.message import ButtonPress, InboundMessage, Platform
from service.app import Core, build_core
from service.settings import Settings
from storage import ThreadMap
from switchboard.errors import ConfigError
from tests.fakes.recording_adapter import RecordingAdapter

ECHO = "python:examples.echo_graph:graph"
_ids = itertools.count(1)


def looping_graph() -> Any:
    """A graph of the operator's own making (create_agent WITHOUT our middleware) whose model
    keeps calling the same tool: only the loop guard can end it."""
    return create_agent(DemoChatModel(), tools=[current_time])


def dm(text: str, *, chat: str = "D1", user: str = "U1") -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=chat,
        sender_id=user,
        sender_name="alice",
        text=text,
        provider_message_id=f"cg{next(_ids)}",
        is_dm=True,
    )


@contextlib.asynccontextmanager
async def chat(
    redis: aioredis.Redis, prefix: str, tmp_path: Path, agent: str = ECHO
) -> AsyncIterator[tuple[Core, RecordingAdapter]]:
    """One service process: its core started on the shared Redis, a recording platform."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        access="open",
        redis_prefix=prefix,
        data_dir=tmp_path,
        agent=agent,
    )
    async with build_core(settings, redis) as core:
        adapter = RecordingAdapter(deliver=core.manager.deliver)
        core.manager.register(adapter)
        yield core, adapter


async def say(core: Core, adapter: RecordingAdapter, msg: InboundMessage) -> str:
    await core.manager.deliver(msg)
    await core.manager.idle(timeout=20)
    return adapter.texts()[-1]


async def test_the_graph_answers_in_chat_and_keeps_history_across_a_restart(
    redis: aioredis.Redis, prefix: str, tmp_path: Path, keys: Any
) -> None:
    async with chat(redis, prefix, tmp_path) as (core, adapter):
        assert core.runtime.kind == "python"
        assert await say(core, adapter, dm("good morning")) == "Echo graph heard: good morning"
        assert await say(core, adapter, dm("second thing")) == "Echo graph heard: second thing"
    thread = await ThreadMap(redis, keys=keys).peek("slack:T1:D1")
    assert thread is not None
    # The graph was compiled without a checkpointer: it got ours, so the thread lives in Redis.
    assert await redis.exists(keys.checkpoint(thread, "idx"))

    async with chat(redis, prefix, tmp_path) as (core, adapter):  # a new process
        assert await say(core, adapter, dm("recall")) == "You first said: good morning"


async def test_a_factory_is_called_once_and_its_graph_answers(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    async with chat(redis, prefix, tmp_path, "python:examples.echo_graph:make_graph") as (
        core,
        adapter,
    ):
        assert await say(core, adapter, dm("hi there")) == "Echo graph heard: hi there"


async def test_an_interrupt_is_asked_with_buttons_and_a_button_answers_it(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    async with chat(redis, prefix, tmp_path) as (core, adapter):
        await say(core, adapter, dm("choose one"))
        asked = adapter.last_prompt()
        assert asked is not None and asked.prompt is not None
        assert "Which one do you mean?" in asked.text
        assert [o for o in asked.prompt.options] == ["alpha", "beta", "gamma"]
        press = InboundMessage(
            platform=Platform.SLACK,
            workspace_id="T1",
            chat_id="D1",
            sender_id="U1",
            sender_name="alice",
            text="",
            provider_message_id=asked.message_id,
            is_dm=True,
            button=ButtonPress(asked.prompt.question_id, 2, interaction_id="press-1"),
        )
        assert await say(core, adapter, press) == "You chose: gamma."
        assert adapter.button_answers[-1] == ("U1", None)
        assert isinstance(core.runtime, LocalGraphRunner)
        assert (
            await core.runtime.pending_question(
                await ThreadMap(redis, keys=core.keys).resolve("slack:T1:D1")
            )
            is None
        )


async def test_a_typed_message_answers_a_waiting_interrupt(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    async with chat(redis, prefix, tmp_path) as (core, adapter):
        await say(core, adapter, dm("choose"))
        assert await say(core, adapter, dm("beta")) == "You chose: beta."


async def test_a_looping_graph_of_your_own_is_stopped_with_the_usual_message(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    target = "python:tests.integration.agent.test_custom_graph:looping_graph"
    async with chat(redis, prefix, tmp_path, target) as (core, adapter):
        assert await say(core, adapter, dm("loop 3")) == "Loop finished."
        assert await say(core, adapter, dm("loop 40")) == STOPPED_FALLBACK


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("python:no_such_module_here:graph", "no module named 'no_such_module_here'"),
        ("python:examples.echo_graph:nothing", "has no 'nothing'"),
        ("python:examples.echo_graph:respond", "expected a compiled graph|factory must take"),
        ("python:json:dumps", "factory must take no arguments"),
    ],
)
async def test_a_target_that_is_no_graph_stops_start_up_naming_the_setting(
    redis: aioredis.Redis, prefix: str, tmp_path: Path, target: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        async with chat(redis, prefix, tmp_path, target):
            pass
    assert str(caught.value).startswith("SWITCHBOARD_AGENT=") and "\n" not in str(caught.value)
