"""Bindings change for the whole fleet: `PUT /api/admin/bindings` (validated, masked, stored in
Redis) and `SIGHUP` (the file read again) reach every worker, a bad change reaches none, and a
restart keeps an API change unless the file itself changed."""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from channels.message import InboundMessage, Platform
from service.app import Core, build_core, running_service
from service.http import build_http_app
from service.settings import Settings
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until

ADMIN = "bindings-admin-key-0123456789abcdef"
FIRST = "- platform: slack\n  user: U1\n  model: openai:first-model\n"
_ids = itertools.count(1)


def _status(user: str = "U1") -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=f"D{user}",
        sender_id=user,
        sender_name="alice",
        text="/status",
        provider_message_id=f"s{next(_ids)}",
        is_dm=True,
    )


def _settings(prefix: str, data_dir: Path, path: Path, **more: object) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=prefix,
        data_dir=data_dir,
        bindings=path,
        admin_key=ADMIN,
        admin_agent_hosts="agents.example",  # the remote agent the masking test sets over HTTP
        **more,
    )


@pytest.fixture
async def fleet(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> AsyncIterator[tuple[Core, Core]]:
    """Two workers sharing one Redis, each with its own copy of the same bindings file."""
    async with AsyncExitStack() as stack:
        cores = []
        for name in ("a", "b"):
            data = tmp_path / name
            data.mkdir()
            path = data / "bindings.yaml"
            path.write_text(FIRST)
            cores.append(
                await stack.enter_async_context(
                    build_core(_settings(prefix, data, path), redis, start_intake=False)
                )
            )
        yield cores[0], cores[1]


def _http(core: Core) -> httpx.AsyncClient:
    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=core.settings,
        accounts=core.accounts,
        links=core.links,
        ready=ready,
        bindings=core.bindings_sync,
    )
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://switchboard.test",
        headers={"Authorization": f"Bearer {ADMIN}"},
    )


async def _models(core: Core, user: str = "U1") -> str:
    adapter = RecordingAdapter(deliver=core.manager.deliver)
    core.manager.register(adapter)
    await core.manager.start()
    await core.manager.deliver(_status(user))
    await core.manager.idle()
    await core.manager.aclose()
    return next(line for line in adapter.texts()[-1].splitlines() if line.startswith("Model:"))


async def test_a_put_through_one_worker_takes_effect_on_every_worker(
    fleet: tuple[Core, Core],
) -> None:
    a, b = fleet
    async with _http(a) as http:
        got = await http.put(
            "/api/admin/bindings",
            json={"rules": [{"platform": "slack", "user": "U1", "model": "openai:second-model"}]},
        )
        assert got.status_code == 200, got.text
        assert got.json()["rules"] == [
            {"platform": "slack", "user": "U1", "model": "openai:second-model"}
        ]
    assert a.bindings is not None and b.bindings is not None
    await wait_until(lambda: b.bindings.bindings.to_doc() == a.bindings.bindings.to_doc())
    assert await _models(b) == "Model: openai:second-model"
    assert await _models(a) == "Model: openai:second-model"


async def test_a_bad_put_is_refused_with_each_problem_and_changes_nothing(
    fleet: tuple[Core, Core],
) -> None:
    a, b = fleet
    async with _http(a) as http:
        got = await http.put(
            "/api/admin/bindings",
            json={"rules": [{"platform": "slak", "model": "x"}, {"user": "U2"}]},
        )
        assert (await http.put("/api/admin/bindings", json={"rules": 3})).status_code == 422
        unauthorized = await http.get("/api/admin/bindings", headers={"Authorization": "x"})
    assert got.status_code == 422
    assert got.json()["problems"] == [
        "rule 1: platform must be one of slack, telegram, discord, console; got 'slak'",
        "rule 1: model must be 'demo' or 'provider:model', e.g. openai:gpt-4o-mini",
        "rule 2: sets nothing: give at least one of agent, assistant, model, system_prompt, "
        "busy, streaming, require_mention, allow_bots, sessions",
    ]
    assert unauthorized.status_code == 401
    assert await _models(a) == "Model: openai:first-model"
    assert await _models(b) == "Model: openai:first-model"


async def test_credentials_in_an_agent_url_are_masked_and_kept_through_a_round_trip(
    fleet: tuple[Core, Core],
) -> None:
    a, _ = fleet
    secret_url = "https://bot:s3cret-pass@agents.example"
    async with _http(a) as http:
        put = await http.put(
            "/api/admin/bindings",
            json={"rules": [{"account": "acme", "agent": secret_url, "assistant": "support"}]},
        )
        shown = (await http.get("/api/admin/bindings")).json()
        again = await http.put("/api/admin/bindings", json={"rules": shown["rules"]})
        forged = await http.put(
            "/api/admin/bindings",
            json={"rules": [{"account": "acme", "agent": "https://***@elsewhere.example"}]},
        )
    assert put.status_code == 200 and again.status_code == 200
    assert "s3cret-pass" not in put.text + str(shown) + again.text
    assert a.bindings is not None
    assert a.bindings.bindings.to_doc()[0]["agent"] == secret_url
    assert forged.status_code == 422 and "masked value" in forged.json()["problems"][0]


async def test_a_restart_keeps_an_api_change_unless_the_file_changed(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    path = tmp_path / "bindings.yaml"
    path.write_text(FIRST)
    settings = _settings(prefix, tmp_path, path)
    async with build_core(settings, redis, start_intake=False) as core, _http(core) as http:
        rules = [{"platform": "slack", "user": "U1", "model": "openai:from-api"}]
        assert (await http.put("/api/admin/bindings", json={"rules": rules})).status_code == 200
    async with build_core(settings, redis, start_intake=False) as core:
        assert await _models(core) == "Model: openai:from-api"
    path.write_text(FIRST.replace("first-model", "deployed-model"))
    async with build_core(settings, redis, start_intake=False) as core:
        assert await _models(core) == "Model: openai:deployed-model"


async def test_sighup_rereads_the_file(redis_url: str, prefix: str, tmp_path: Path) -> None:
    path = tmp_path / "bindings.yaml"
    path.write_text(FIRST)
    settings = _settings(prefix, tmp_path, path, redis_url=redis_url)
    async with running_service(settings, http=False) as core:
        assert core.bindings is not None
        path.write_text(FIRST.replace("first-model", "reloaded-model"))
        os.kill(os.getpid(), signal.SIGHUP)
        await wait_until(
            lambda: core.bindings.bindings.to_doc()[0]["model"] == "openai:reloaded-model"
        )


async def test_a_reload_of_a_bad_file_keeps_the_rules_in_force(
    fleet: tuple[Core, Core], tmp_path: Path
) -> None:
    a, _ = fleet
    assert a.bindings_sync is not None and a.bindings is not None
    version = a.bindings_sync.version
    (tmp_path / "a" / "bindings.yaml").write_text("- platform: slack\n  chanel: C1\n")
    assert await a.bindings_sync.reload_file() is False
    assert a.bindings_sync.version == version
    assert a.bindings.bindings.to_doc()[0]["model"] == "openai:first-model"
