"""MCP tools: a real MCP server over stdio (the `mcp` package), through the whole service.

The model is the real langchain-openai client against the loopback fake OpenAI server, which
calls a tool when told `use <tool> <json>`; the tool is `vault_lookup` of
`tests/fakes/mcp_server.py`, started by langchain-mcp-adapters as a subprocess. Its secret is
both a `$VAR` in the config and a literal value in it: neither may reach the admin API or a log.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agent import BuiltinAgent
from channels.message import InboundMessage, Platform
from service.app import Core, running_service
from service.settings import Settings
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.recording_adapter import RecordingAdapter

ADMIN_KEY = "admin-key-for-mcp-tests-0123456789"
SERVER = str(Path(__file__).resolve().parents[2] / "fakes" / "mcp_server.py")
SECRET = f"vault-secret-{uuid.uuid4().hex}"
VAR = "SB_TEST_VAULT_TOKEN"


def mcp_config() -> dict[str, object]:
    return {
        "mcpServers": {
            "vault": {
                "command": sys.executable,
                "args": [SERVER],
                "env": {"FAKE_MCP_TOKEN": f"${VAR}", "FAKE_MCP_EXPECTED": SECRET},
            },
            "broken": {"command": "/nonexistent/switchboard-mcp-server"},
            "unset": {"command": sys.executable, "args": [SERVER], "env": {"X": "$SB_TEST_UNSET"}},
            "off": {"url": "http://127.0.0.1:9/mcp", "enabled": False},
        }
    }


@pytest.fixture
async def service(
    redis_url: str,
    prefix: str,
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[Core, RecordingAdapter, httpx.AsyncClient, Path]]:
    monkeypatch.setenv(VAR, SECRET)
    monkeypatch.delenv("SB_TEST_UNSET", raising=False)
    config_file = tmp_path / "mcp.json"
    config_file.write_text(json.dumps(mcp_config()))
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        access="open",
        model="openai:gpt-4o-mini",
        openai_base_url=fake_openai.base_url,
        openai_api_key=API_KEY,
        mcp_config=config_file,
        admin_key=ADMIN_KEY,
        http_port=0,
    )
    async with running_service(settings) as core:
        adapter = RecordingAdapter(deliver=core.manager.deliver)
        core.manager.register(adapter)
        base = f"http://127.0.0.1:{core.http_port}"
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
            yield core, adapter, http, config_file


async def ask(core: Core, adapter: RecordingAdapter, text: str) -> str:
    await core.manager.deliver(
        InboundMessage(
            platform=Platform.SLACK,
            workspace_id="T1",
            chat_id="D1",
            sender_id="U1",
            sender_name="alice",
            text=text,
            provider_message_id=uuid.uuid4().hex,
            is_dm=True,
        )
    )
    await core.manager.idle(timeout=60)
    return adapter.texts()[-1]


async def test_the_agent_calls_a_real_stdio_mcp_tool_and_broken_servers_are_skipped(
    service: tuple[Core, RecordingAdapter, httpx.AsyncClient, Path],
    fake_openai: FakeOpenAI,
) -> None:
    core, adapter, _http, _file = service
    runtime = core.runtime
    assert isinstance(runtime, BuiltinAgent)
    assert runtime.tool_names() == (
        "ask_clarification",
        "current_time",
        "send_file",
        "vault_lookup",
    )
    status = {s.name: s for s in runtime.mcp_servers()}
    assert status["vault"].ok and status["vault"].tools == ("vault_lookup",)
    assert not status["broken"].ok and not status["unset"].ok
    assert "SB_TEST_UNSET" in status["unset"].error
    assert "off" not in status  # configured but disabled

    reply = await ask(core, adapter, 'use vault_lookup {"key": "door"}')
    # The server answered "unlocked" only because it received the resolved secret.
    assert reply == "The tool said: vault value of door is 42."
    assert "vault_lookup" in fake_openai.requests[0].tool_names
    assert await ask(core, adapter, "plain words") == "You said: plain words"


async def test_the_admin_api_masks_secrets_and_a_put_keeps_them(
    service: tuple[Core, RecordingAdapter, httpx.AsyncClient, Path],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    core, adapter, http, config_file = service
    caplog.set_level("DEBUG")
    assert (
        await http.get("/api/admin/mcp", headers={"Authorization": "Bearer nope"})
    ).status_code == 401

    shown = await http.get("/api/admin/mcp")
    assert shown.status_code == 200, shown.text
    body = shown.json()
    assert SECRET not in shown.text
    vault = body["config"]["mcpServers"]["vault"]
    assert vault["env"] == {"FAKE_MCP_TOKEN": f"${VAR}", "FAKE_MCP_EXPECTED": "***"}
    assert {s["name"]: s["loaded"] for s in body["servers"]} == {
        "vault": True,
        "broken": False,
        "unset": False,
    }

    # Send the masked config back with one change: the stored secret must survive.
    sent = body["config"]
    sent["mcpServers"]["broken"] = None
    sent["mcpServers"]["vault"]["args"] = [*vault["args"]]
    put = await http.put("/api/admin/mcp", json=sent)
    assert put.status_code == 200, put.text
    assert SECRET not in put.text
    stored = json.loads(config_file.read_text())
    assert stored["mcpServers"]["vault"]["env"] == {
        "FAKE_MCP_TOKEN": f"${VAR}",
        "FAKE_MCP_EXPECTED": SECRET,
    }
    assert "broken" not in stored["mcpServers"]
    assert [s["name"] for s in put.json()["servers"]] == ["vault", "unset"]
    # The reloaded tools still reach the server with its secret.
    assert await ask(core, adapter, 'use vault_lookup {"key": "gate"}') == (
        "The tool said: vault value of gate is 42."
    )

    refused = await http.put(
        "/api/admin/mcp", json={"mcpServers": {"vault": {"env": {"NEW_ONE": "***"}}}}
    )
    assert refused.status_code == 422 and SECRET not in refused.text

    out, err = capsys.readouterr()
    for text in (caplog.text, out, err):
        assert SECRET not in text
