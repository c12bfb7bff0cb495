"""What `PUT /api/admin/bindings` may make an agent (issue 43, item 3), through the real HTTP
app, the production wiring (`build_core`) and real Redis: the admin key is not a shell on the
host (`python:` needs `SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on`, and code that ends its interpreter
ends only a probe's), not a way to send conversations to a host the operator never chose, never
a way to load files from the data directory, and a remote agent is sent no key the operator did
not name for it."""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from channels.message import InboundMessage, Platform
from service.app import Core, build_core
from service.bindings_sync import API_ORIGIN
from service.http import build_http_app
from service.settings import Settings
from storage import BindingsStore, Keys
from switchboard.errors import ConfigError
from tests.fakes.langgraph_server import REPLY, FakeLangGraph
from tests.fakes.recording_adapter import RecordingAdapter

ADMIN = "agent-policy-admin-key-0123456789abcdef"
FILE = "- platform: slack\n  user: U1\n  model: openai:first-model\n"
ECHO = "python:examples.echo_graph:graph"
_ids = itertools.count(1)


def _dm(text: str, user: str) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=f"D{user}",
        sender_id=user,
        sender_name="alice",
        text=text,
        provider_message_id=f"ap{next(_ids)}",
        is_dm=True,
    )


def _settings(prefix: str, data_dir: Path, rules: str | None = FILE, **more: Any) -> Settings:
    path = data_dir.parent / f"bindings-{data_dir.name}.yaml"
    if rules is not None:
        path.write_text(rules)
    return Settings(
        _env_file=None,
        access="open",
        streaming="off",
        redis_prefix=prefix,
        data_dir=data_dir,
        bindings=path if rules is not None else None,
        admin_key=ADMIN,
        **more,
    )


@contextlib.asynccontextmanager
async def _service(
    settings: Settings, redis: aioredis.Redis
) -> AsyncIterator[tuple[Core, httpx.AsyncClient]]:
    async def ready() -> bool:
        return True

    async with build_core(settings, redis, start_intake=False) as core:
        app = build_http_app(
            settings=core.settings,
            accounts=core.accounts,
            links=core.links,
            ready=ready,
            bindings=core.bindings_sync,
            status=core.status,
        )
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://switchboard.test",
            headers={"Authorization": f"Bearer {ADMIN}"},
        ) as http:
            yield core, http


async def _reply(core: Core, text: str, user: str) -> str:
    adapter = RecordingAdapter(deliver=core.manager.deliver)
    core.manager.register(adapter)
    await core.manager.start()
    await core.manager.deliver(_dm(text, user))
    await core.manager.idle()
    await core.manager.aclose()
    return adapter.texts()[-1]


async def _put(http: httpx.AsyncClient, *rules: dict[str, Any]) -> httpx.Response:
    return await http.put("/api/admin/bindings", json={"rules": list(rules)})


def _stored(core: Core) -> list[dict[str, Any]]:
    assert core.bindings is not None
    return core.bindings.bindings.to_doc()


async def test_a_python_agent_sent_over_http_is_refused_unless_commands_are_allowed(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    rules = FILE + f"- platform: slack\n  user: U2\n  agent: {ECHO}\n"
    async with _service(_settings(prefix, tmp_path / "a", rules), redis) as (core, http):
        before, version = _stored(core), core.bindings_sync.version  # type: ignore[union-attr]
        refused = await _put(http, {"platform": "slack", "user": "U3", "agent": "python:os:abort"})
        stored = await BindingsStore(redis, keys=Keys(prefix)).read()
        # the file's own python: agent goes back unchanged in a read-edit-write cycle
        shown = (await http.get("/api/admin/bindings")).json()["rules"]
        again = await http.put("/api/admin/bindings", json={"rules": shown})
    assert refused.status_code == 403, refused.text
    [problem] = refused.json()["problems"]
    assert problem.startswith("rule 1: agent python:os:abort") and (
        "SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on" in problem
    )
    assert stored is not None and stored.version == version and "abort" not in stored.doc
    assert before == shown
    assert again.status_code == 200, again.text


async def test_with_commands_allowed_an_aborting_agent_is_refused_and_the_worker_lives(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    settings = _settings(prefix, tmp_path / "a", admin_allow_commands="on")
    async with _service(settings, redis) as (core, http):
        aborts = await _put(http, {"platform": "slack", "user": "U3", "agent": "python:os:abort"})
        exits = await _put(http, {"platform": "slack", "user": "U3", "agent": "python:sys:exit"})
        after_refusals = _stored(core)
        works = await _put(http, {"platform": "slack", "user": "U3", "agent": ECHO})
        answered = await _reply(core, "still here?", "U3")
    assert aborts.status_code == 422, aborts.text
    assert aborts.json()["problems"] == [
        "rule 1: python:os:abort: loading it ended the interpreter (SIGABRT)"
    ]
    assert exits.status_code == 422
    assert exits.json()["problems"] == ["rule 1: python:sys:exit: its factory failed (SystemExit)"]
    assert after_refusals == [{"platform": "slack", "user": "U1", "model": "openai:first-model"}]
    assert works.status_code == 200, works.text
    assert answered == "Echo graph heard: still here?"


async def test_stored_rules_whose_agent_ends_its_interpreter_are_marked_broken_at_start(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    """Rules an older release let the admin API store outlive restarts: a worker starting on
    them must not die with them."""
    settings = _settings(prefix, tmp_path / "a", admin_allow_commands="on")
    async with build_core(settings, redis, start_intake=False):
        pass  # the file is adopted: later starts keep what the API stores
    doc = '[{"platform":"slack","user":"U3","agent":"python:os:abort"}]'
    await BindingsStore(redis, keys=Keys(prefix)).put(doc, origin=API_ORIGIN)
    async with _service(settings, redis) as (core, http):
        ready = (await http.get("/readyz")).json()
        sorry = await _reply(core, "hello?", "U3")
    assert ready["agents_unavailable"] == {
        "python:os:abort": "python:os:abort: loading it ended the interpreter (SIGABRT)"
    }
    assert sorry.startswith("Sorry") and "(ref " in sorry


async def test_an_operator_agent_that_raises_system_exit_is_broken_not_fatal(
    redis: aioredis.Redis, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    name = f"exits_{uuid.uuid4().hex[:8]}"
    (code / f"{name}.py").write_text("raise SystemExit(3)\n")
    monkeypatch.syspath_prepend(str(code))
    rules = FILE + f"- platform: slack\n  user: U2\n  agent: python:{name}:graph\n"
    async with _service(_settings(prefix, tmp_path / "a", rules), redis) as (core, _):
        sorry = await _reply(core, "hello?", "U2")
        fine = await _reply(core, "/status", "U1")
        problems = core.status()["agents_unavailable"]
    assert isinstance(problems, dict)
    assert problems[f"python:{name}:graph"] == (
        f"SWITCHBOARD_AGENT=python:{name}:graph: importing it failed (SystemExit)"
    )
    assert sorry.startswith("Sorry") and "Traceback" not in sorry
    assert "Model: openai:first-model" in fine


async def test_an_agent_module_in_the_data_directory_is_refused_from_any_source(
    redis: aioredis.Redis, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python:data.files.x` would import a file the outbound-file directory holds."""
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    (data / "files").mkdir(parents=True, mode=0o700)
    ran = tmp_path / "ran"
    (data / "files" / "planted.py").write_text(
        f"import pathlib\npathlib.Path({str(ran)!r}).write_text('imported')\ngraph = None\n"
    )
    planted = "python:data.files.planted:graph"
    settings = _settings(prefix, data, admin_allow_commands="on")
    async with _service(settings, redis) as (core, http):
        put = await _put(http, {"platform": "slack", "user": "U3", "agent": planted})
    assert put.status_code == 403, put.text
    assert "data directory" in put.json()["problems"][0]
    rules = FILE + f"- platform: slack\n  user: U2\n  agent: {planted}\n"
    async with _service(_settings(prefix, data, rules), redis) as (core, _):
        assert "data directory" in str(core.status()["agents_unavailable"])
    with pytest.raises(ConfigError, match="data directory"):
        async with build_core(_settings(prefix, data, None, agent=planted), redis):
            pass
    assert not ran.exists()


async def test_a_remote_agent_sent_over_http_must_be_on_a_host_the_operator_configured(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    fake = FakeLangGraph()
    url = await fake.start()
    host = url.removeprefix("http://")
    try:
        async with _service(_settings(prefix, tmp_path / "a"), redis) as (core, http):
            unknown = await _put(http, {"platform": "slack", "user": "U3", "agent": url})
            assert _stored(core) == [
                {"platform": "slack", "user": "U1", "model": "openai:first-model"}
            ]
        listed = _settings(prefix, tmp_path / "b", admin_agent_hosts=host)
        async with _service(listed, redis) as (core, http):
            approved = await _put(http, {"platform": "slack", "user": "U3", "agent": url})
            answered = await _reply(core, "hi", "U3")
        rules = FILE + f"- platform: slack\n  user: U2\n  agent: {url}/v1\n"
        async with _service(_settings(prefix, tmp_path / "c", rules), redis) as (_, http):
            same_host = await _put(http, {"platform": "slack", "user": "U3", "agent": url})
    finally:
        await fake.stop()
    assert unknown.status_code == 403, unknown.text
    assert f"agent URL on {host}" in unknown.json()["problems"][0]
    assert approved.status_code == 200 and answered == REPLY
    assert same_host.status_code == 200, same_host.text


async def test_a_remote_agent_is_sent_only_the_key_the_operator_named_for_its_url(
    redis: aioredis.Redis, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.setenv(name, f"lsv2_{name.lower()}_service_secret")
    monkeypatch.setenv("SUPPORT_AGENT_KEY", "named-for-this-server")
    fake = FakeLangGraph()
    url = await fake.start()
    try:
        unnamed = _settings(prefix, tmp_path / "a", None, agent=url)
        async with _service(unnamed, redis) as (core, _):
            first = await _reply(core, "hi", "U1")
        seen_unnamed = fake.api_keys()
        fake.headers.clear()
        named = _settings(
            prefix, tmp_path / "b", None, agent=url, agent_api_keys=f"{url}/=SUPPORT_AGENT_KEY"
        )
        async with _service(named, redis) as (core, _):
            second = await _reply(core, "hi", "U9")
    finally:
        await fake.stop()
    assert first == REPLY and second == REPLY
    assert seen_unnamed and seen_unnamed == [None] * len(seen_unnamed)
    assert fake.api_keys() and set(fake.api_keys()) == {"named-for-this-server"}
