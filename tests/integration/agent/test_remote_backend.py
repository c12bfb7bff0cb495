"""`SWITCHBOARD_AGENT=http://…`: a real LangGraph server (`langgraph dev`, from
`langgraph-cli[inmem]`) serving `examples/echo_graph.py` (assistant "agent") and the tool-calling
`remote_stream_graph.py` beside this file (assistant "streaming"), reached through `langgraph-sdk`.

The server is started once for the module on a free loopback port, in a scratch directory
holding copies of both graphs and of `examples/langgraph.json` with the second graph added (the
CLI resolves graph paths against its working directory and keeps snapshots of its in-memory
state there), with analytics off: no network beyond loopback. Each chat test talks to it
through the production wiring (`build_core`, real Redis, the real manager) and a recording
platform; the token-streaming tests call a `RemoteGraphRunner` with recording `on_text` and
`on_status` sinks, as the manager does when streaming is on.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from agent import RemoteGraphRunner
from agent.result import TurnContext
from channels.message import ButtonPress, InboundMessage, Platform
from service.app import Core, build_core
from service.settings import Settings
from storage import Keys, RemoteThreads, ThreadMap
from tests.integration.agent.remote_stream_graph import (
    ARGS_MARK,
    INNER_MARK,
    OUTPUT_MARK,
    REPLY,
    WORD_EVERY_S,
)
from tests.support import free_port, wait_until

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
STREAM_GRAPH = Path(__file__).resolve().parent / "remote_stream_graph.py"
STREAMING = "streaming"  # the assistant (graph id) serving STREAM_GRAPH
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def langgraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cli = Path(sys.executable).parent / "langgraph"
    if not cli.exists():
        pytest.fail("langgraph-cli[inmem] is not installed (make install installs the dev extra)")
    port = free_port()
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    shutil.copy(EXAMPLES / "echo_graph.py", workdir / "echo_graph.py")
    shutil.copy(STREAM_GRAPH, workdir / STREAM_GRAPH.name)
    config = json.loads((EXAMPLES / "langgraph.json").read_text())
    config["graphs"][STREAMING] = f"./{STREAM_GRAPH.name}:graph"
    (workdir / "langgraph.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }
    log = (workdir / "server.log").open("wb")
    proc = subprocess.Popen(
        [
            str(cli),
            "dev",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-browser",
            "--no-reload",
            "--n-jobs-per-worker",
            "4",
            "--config",
            str(workdir / "langgraph.json"),
        ],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its workers are ours to stop with it
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited: {(workdir / 'server.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail("langgraph dev did not start within 90 s")
            time.sleep(0.2)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        log.close()


class Chat:
    """One Switchboard process on the shared Redis, with a recording Slack-like platform."""

    def __init__(self, core: Core) -> None:
        from tests.fakes.recording_adapter import RecordingAdapter

        self.core = core
        self.adapter = RecordingAdapter(deliver=core.manager.deliver)
        core.manager.register(self.adapter)

    @property
    def runner(self) -> RemoteGraphRunner:
        assert isinstance(self.core.runtime, RemoteGraphRunner)
        return self.core.runtime

    def message(self, text: str, **extra: object) -> InboundMessage:
        fields: dict[str, object] = {
            "platform": Platform.SLACK,
            "workspace_id": "T1",
            "chat_id": "D1",
            "sender_id": "U1",
            "sender_name": "alice",
            "text": text,
            "provider_message_id": f"rb{next(_ids)}",
            "is_dm": True,
            **extra,
        }
        return InboundMessage(**fields)  # type: ignore[arg-type]

    async def say(self, text: str) -> str:
        await self.core.manager.deliver(self.message(text))
        await self.core.manager.idle(timeout=30)
        return self.adapter.texts()[-1]


@contextlib.asynccontextmanager
async def chat(url: str, redis: aioredis.Redis, prefix: str, tmp_path: Path) -> AsyncIterator[Chat]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        access="open",
        redis_prefix=prefix,
        data_dir=tmp_path,
        agent=url,
        model="openai:not-needed",  # a remote agent must start without a model or its key
    )
    async with build_core(settings, redis) as core:
        yield Chat(core)


async def test_the_server_answers_and_its_thread_survives_a_restart(
    langgraph_server: str, redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    async with chat(langgraph_server, redis, prefix, tmp_path) as one:
        assert one.runner.kind == "remote"
        assert await one.say("good evening") == "Echo graph heard: good evening"
    thread = await ThreadMap(redis, keys=one.core.keys).peek("slack:T1:D1")
    assert thread is not None
    server_thread = await RemoteThreads(redis, keys=one.core.keys).get(thread)
    assert server_thread is not None and server_thread != thread
    assert await redis.exists(one.core.keys.remote_thread(thread))

    async with chat(langgraph_server, redis, prefix, tmp_path) as two:  # a new process
        assert await two.say("recall") == "You first said: good evening"
        assert await two.runner.server_thread(thread) == server_thread


async def test_a_server_interrupt_is_a_question_a_button_answers(
    langgraph_server: str, redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    async with chat(langgraph_server, redis, prefix, tmp_path) as c:
        await c.say("choose a letter")
        asked = c.adapter.last_prompt()
        assert asked is not None and asked.prompt is not None
        assert "Which one do you mean?" in asked.text
        assert list(asked.prompt.options) == ["alpha", "beta", "gamma"]
        thread = await ThreadMap(redis, keys=c.core.keys).resolve("slack:T1:D1")
        pending = await c.runner.pending_question(thread)
        assert pending is not None and pending.options == ("alpha", "beta", "gamma")

        press = c.message(
            "",
            provider_message_id=asked.message_id,
            button=ButtonPress(asked.prompt.question_id, 1, interaction_id="remote-press"),
        )
        await c.core.manager.deliver(press)
        await c.core.manager.idle(timeout=30)
        assert c.adapter.texts()[-1] == "You chose: beta."
        assert await c.runner.pending_question(thread) is None
        # A typed answer works as well as a button.
        await c.say("choose again")
        assert await c.say("gamma") == "You chose: gamma."


async def test_stop_cancels_the_server_run_and_cancelling_again_is_harmless(
    langgraph_server: str, redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    async with chat(langgraph_server, redis, prefix, tmp_path) as c:
        await c.say("warm up")
        thread = await ThreadMap(redis, keys=c.core.keys).resolve("slack:T1:D1")
        server_thread = await c.runner.server_thread(thread)
        assert server_thread is not None

        await c.core.manager.deliver(c.message("slow 30"))
        await wait_until(lambda: c.adapter.typing_count >= 1, timeout=15)

        async def running() -> list[dict[str, object]]:
            runs = await c.runner.client.runs.list(server_thread)
            return [r for r in runs if r["status"] in ("pending", "running")]

        slow = (await wait_until(running, timeout=15))[0]
        started = time.monotonic()
        await c.core.manager.deliver(c.message("/stop"))
        await c.core.manager.idle(timeout=20)
        assert time.monotonic() - started < 15  # well before the 30 s run would have ended
        assert "Stopped." in c.adapter.texts()

        async def status() -> str:
            run = await c.runner.client.runs.get(server_thread, slow["run_id"])
            return str(run["status"])

        assert await wait_until(lambda: _is(status, "interrupted"), timeout=15), (
            "the server run was not cancelled"
        )
        await c.runner.cancel_run(thread, str(slow["run_id"]))  # again: no error
        assert await c.say("after the stop") == "Echo graph heard: after the stop"


async def _is(status: object, expected: str) -> bool:
    return await status() == expected  # type: ignore[operator]


class Sinks:
    """`on_text`/`on_status` that record what arrives, when, and whether the server run was
    still running when the first piece came."""

    def __init__(self, runner: RemoteGraphRunner, thread: str) -> None:
        self.runner = runner
        self.thread = thread
        self.events: list[tuple[str, str]] = []
        self.arrivals: list[float] = []
        self.running_at_first_text = False

    @property
    def pieces(self) -> list[str]:
        return [value for kind, value in self.events if kind == "text"]

    @property
    def statuses(self) -> list[str]:
        return [value for kind, value in self.events if kind == "status"]

    def context(self) -> TurnContext:
        return TurnContext(user_id="U1", platform="slack", on_text=self.text, on_status=self.status)

    async def text(self, piece: str) -> None:
        if not self.pieces:
            server_thread = await self.runner.server_thread(self.thread)
            assert server_thread is not None
            runs = await self.runner.client.runs.list(server_thread)
            self.running_at_first_text = any(r["status"] == "running" for r in runs)
        self.events.append(("text", piece))
        self.arrivals.append(time.monotonic())

    async def status(self, line: str) -> None:
        self.events.append(("status", line))


@contextlib.asynccontextmanager
async def streaming_runner(
    url: str, redis: aioredis.Redis, keys: Keys
) -> AsyncIterator[RemoteGraphRunner]:
    runner = RemoteGraphRunner(
        url=url, assistant=STREAMING, threads=RemoteThreads(redis, keys=keys)
    )
    try:
        yield runner
    finally:
        await runner.aclose()


async def _stream_modes(runner: RemoteGraphRunner, thread: str, run_id: str) -> list[str]:
    """The stream modes the server recorded for a run (what the client asked for)."""
    server_thread = await runner.server_thread(thread)
    assert server_thread is not None
    run = await runner.client.runs.get(server_thread, run_id)
    return list(run["kwargs"]["stream_mode"])


async def test_with_on_text_the_reply_streams_in_pieces_and_tool_steps_only_as_a_status(
    langgraph_server: str, redis: aioredis.Redis, keys: Keys
) -> None:
    async with streaming_runner(langgraph_server, redis, keys) as runner:
        sinks = Sinks(runner, "th-stream")
        result = await runner.run_turn("th-stream", "look up the answer", sinks.context())
        ended = time.monotonic()

        assert result.reply_text == REPLY
        assert result.question is None
        assert len(sinks.pieces) >= 5, sinks.pieces
        assert "".join(sinks.pieces) == result.reply_text
        # Pieces came while the server run was still going, spread over its writing.
        assert sinks.running_at_first_text
        assert ended - sinks.arrivals[0] >= 5 * WORD_EVERY_S
        assert sinks.arrivals[-1] - sinks.arrivals[0] >= 5 * WORD_EVERY_S
        # The tool step is one status line, before the reply; nothing of the tool is text.
        assert sinks.statuses == ["Using lookup…"]
        assert sinks.events[0] == ("status", "Using lookup…")
        streamed = "".join(sinks.pieces)
        for marker in (ARGS_MARK, INNER_MARK, OUTPUT_MARK):
            assert marker not in streamed
        assert "messages-tuple" in await _stream_modes(runner, "th-stream", result.run_id)


async def test_without_on_text_the_result_is_the_same_and_no_tokens_are_asked_for(
    langgraph_server: str, redis: aioredis.Redis, keys: Keys
) -> None:
    async with streaming_runner(langgraph_server, redis, keys) as runner:
        sinks = Sinks(runner, "th-on")
        streamed = await runner.run_turn("th-on", "look up the answer", sinks.context())
        plain = await runner.run_turn("th-off", "look up the answer", TurnContext(user_id="U1"))

        assert plain.reply_text == streamed.reply_text == REPLY
        assert plain.question is None and streamed.question is None
        assert await _stream_modes(runner, "th-off", plain.run_id) == ["values", "updates"]


async def test_a_question_streams_nothing_and_its_answer_streams_the_reply(
    langgraph_server: str, redis: aioredis.Redis, keys: Keys
) -> None:
    async with streaming_runner(langgraph_server, redis, keys) as runner:
        asking = Sinks(runner, "th-ask")
        asked = await runner.run_turn("th-ask", "choose", asking.context())
        assert asked.question is not None
        assert asked.question.options == ("alpha", "beta", "gamma")
        assert (
            asking.events == []
        )  # ask_clarification is never announced; the question is sent whole

        answering = Sinks(runner, "th-ask")
        answered = await runner.resume("th-ask", "beta", answering.context())
        assert answered.question is None
        assert answered.reply_text == "You chose: beta."
        assert "".join(answering.pieces) == answered.reply_text
        assert await runner.pending_question("th-ask") is None
