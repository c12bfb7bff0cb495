"""The admin API as an attack surface (issues 32 and 35), on the real HTTP app and real Redis:
MCP configs over HTTP, masking, usage limits, nesting, and wrong keys."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from agent import McpConfigFile
from channels.usage import Budget, UsageDesk
from service.http import build_http_app
from service.settings import Settings
from storage import Accounts, Keys, Links, UsageLedger

ADMIN_KEY = "admin-surface-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
SERVICE_SECRET = "sk-service-own-key-0123456789"  # what a config must never carry away
STORED_SECRET = "stored-literal-secret-value"


def stored_config() -> dict[str, object]:
    return {
        "mcpServers": {
            "search": {
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": f"Bearer {STORED_SECRET}"},
            },
            "files": {
                "command": sys.executable,
                "args": ["server.py", "--api-key", STORED_SECRET, "--verbose"],
                "env": {"FILES_TOKEN": "$FILES_TOKEN", "DB": f"postgres://u:{STORED_SECRET}@db/x"},
                "enabled": False,
            },
        }
    }


@dataclass
class Admin:
    http: httpx.AsyncClient
    config_file: Path
    ledger: UsageLedger

    def stored(self) -> dict[str, object]:
        return json.loads(self.config_file.read_text())  # type: ignore[no-any-return]


async def _admin(
    redis: aioredis.Redis,
    keys: Keys,
    tmp_path: Path,
    *,
    client: tuple[str, int] = ("10.1.2.3", 4000),
    **overrides: object,
) -> AsyncIterator[Admin]:
    config_file = tmp_path / "mcp.json"
    config_file.write_text(json.dumps(stored_config()))
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        admin_key=ADMIN_KEY,
        **overrides,  # type: ignore[arg-type]
    )
    ledger = UsageLedger(redis, keys=keys)

    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=settings,
        accounts=Accounts(redis, keys=keys),
        links=Links(redis, keys=keys),
        ready=ready,
        usage=UsageDesk(ledger=ledger, budget=Budget.from_usd(daily=1, weekly=0)),
        mcp_file=McpConfigFile(config_file),
    )
    transport = httpx.ASGITransport(app=app, client=client)
    async with httpx.AsyncClient(transport=transport, base_url="http://sb.test") as http:
        yield Admin(http, config_file, ledger)


@pytest.fixture
async def admin(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Admin]:
    monkeypatch.setenv("SB_TEST_SERVICE_KEY", SERVICE_SECRET)
    async for made in _admin(redis, keys, tmp_path):
        yield made


# -- MCP over HTTP ----------------------------------------------------------------------------


async def test_the_mcp_read_masks_every_secret_shape_in_the_stored_config(admin: Admin) -> None:
    shown = await admin.http.get("/api/admin/mcp", headers=AUTH)
    assert shown.status_code == 200
    assert STORED_SECRET not in shown.text
    files = shown.json()["config"]["mcpServers"]["files"]
    assert files["args"] == ["server.py", "--api-key", "***", "--verbose"]
    assert files["env"] == {"FILES_TOKEN": "$FILES_TOKEN", "DB": "***"}


async def test_a_config_over_http_may_not_reference_the_services_own_variables(
    admin: Admin,
) -> None:
    body = {"mcpServers": {"search": {"headers": {"X-Key": "${SB_TEST_SERVICE_KEY}"}}}}
    refused = await admin.http.put("/api/admin/mcp", headers=AUTH, json=body)
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert "$SB_TEST_SERVICE_KEY" in error and "SWITCHBOARD_MCP_ALLOWED_VARS" in error
    assert SERVICE_SECRET not in refused.text
    assert "X-Key" not in json.dumps(admin.stored())


async def test_a_variable_listed_in_the_allowed_setting_may_be_referenced(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    async for made in _admin(redis, keys, tmp_path, mcp_allowed_vars="SB_TEST_TEAM_KEY"):
        body = {"mcpServers": {"search": {"headers": {"X-Key": "${SB_TEST_TEAM_KEY}"}}}}
        assert (await made.http.put("/api/admin/mcp", headers=AUTH, json=body)).status_code == 200
        headers = made.stored()["mcpServers"]["search"]["headers"]  # type: ignore[index]
        assert headers["X-Key"] == "${SB_TEST_TEAM_KEY}"


async def test_a_mask_sent_back_with_a_new_url_does_not_keep_the_stored_authorization(
    admin: Admin,
) -> None:
    moved = {"url": "https://collector.evil.test/mcp", "headers": {"Authorization": "***"}}
    refused = await admin.http.put(
        "/api/admin/mcp", headers=AUTH, json={"mcpServers": {"search": moved}}
    )
    assert refused.status_code == 422 and "url/command changed" in refused.json()["error"]
    left_out = {"url": "https://collector.evil.test/mcp"}
    refused = await admin.http.put(
        "/api/admin/mcp", headers=AUTH, json={"mcpServers": {"search": left_out}}
    )
    assert refused.status_code == 422 and "headers" in refused.json()["error"]
    assert STORED_SECRET not in refused.text
    assert admin.stored() == stored_config()


@pytest.mark.parametrize(
    "env",
    [
        {"UPSTREAM_URL": "https://collector.evil.test"},
        {"HTTP_PROXY": "http://proxy.evil.test:3128"},
        {"DOCKER_HOST": "tcp://docker.evil.test:2375"},
        {"FILES_TOKEN": None},
    ],
    ids=["UPSTREAM_URL", "HTTP_PROXY", "DOCKER_HOST", "a variable removed"],
)
async def test_an_env_change_with_the_secret_left_masked_does_not_keep_the_stored_secret(
    admin: Admin, env: dict[str, object]
) -> None:
    for sent in ({**env, "DB": "***"}, env):  # the secret masked beside the change, or left out
        refused = await admin.http.put(
            "/api/admin/mcp", headers=AUTH, json={"mcpServers": {"files": {"env": sent}}}
        )
        assert refused.status_code == 422, refused.text
        assert "its env changed" in refused.json()["error"]
        assert STORED_SECRET not in refused.text
    assert "env.DB" in refused.json()["error"] and "args" in refused.json()["error"]
    assert admin.stored() == stored_config()


async def test_an_env_change_is_saved_once_the_servers_secrets_are_sent_again(
    admin: Admin,
) -> None:
    server = {
        "args": ["server.py", "--api-key", STORED_SECRET, "--verbose"],  # args may not change
        "env": {"UPSTREAM_URL": "https://mcp.example.net", "FILES_TOKEN": None, "DB": "sqlite://"},
    }
    put = await admin.http.put(
        "/api/admin/mcp", headers=AUTH, json={"mcpServers": {"files": server}}
    )
    assert put.status_code == 200, put.text
    files = admin.stored()["mcpServers"]["files"]  # type: ignore[index]
    assert files["env"] == {"UPSTREAM_URL": "https://mcp.example.net", "DB": "sqlite://"}
    assert files["args"] == stored_config()["mcpServers"]["files"]["args"]  # type: ignore[index]


async def test_the_masked_config_sent_back_as_it_was_shown_changes_nothing(admin: Admin) -> None:
    shown = (await admin.http.get("/api/admin/mcp", headers=AUTH)).json()["config"]
    put = await admin.http.put("/api/admin/mcp", headers=AUTH, json=shown)
    assert put.status_code == 200, put.text
    assert admin.stored() == stored_config()


async def test_a_stdio_command_over_http_is_forbidden_while_commands_are_off(
    admin: Admin,
) -> None:
    new = {"mcpServers": {"shell": {"command": "sh", "args": ["-c", "id > /tmp/pwned"]}}}
    refused = await admin.http.put("/api/admin/mcp", headers=AUTH, json=new)
    assert refused.status_code == 403
    assert "SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on" in refused.json()["error"]
    changed = {"mcpServers": {"files": {"command": "/bin/sh"}}}
    assert (await admin.http.put("/api/admin/mcp", headers=AUTH, json=changed)).status_code == 403
    preload = {"mcpServers": {"files": {"env": {"LD_PRELOAD": "/tmp/x.so"}}}}
    assert (await admin.http.put("/api/admin/mcp", headers=AUTH, json=preload)).status_code == 403
    assert admin.stored() == stored_config()
    # What stays allowed: enabling a server from the file, editing its env (sending its secrets
    # again, as an env change is a target change), adding a URL server.
    resent = {
        "enabled": True,
        "args": ["server.py", "--api-key", STORED_SECRET, "--verbose"],
        "env": {"EXTRA": "1", "FILES_TOKEN": None, "DB": "postgres://u:rotated@db/x"},
    }
    allowed = {
        "mcpServers": {
            "files": resent,
            "web": {"url": "https://mcp.example.org/mcp"},
        }
    }
    assert (await admin.http.put("/api/admin/mcp", headers=AUTH, json=allowed)).status_code == 200


async def test_with_commands_allowed_a_stdio_server_may_be_added_over_http(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    async for made in _admin(redis, keys, tmp_path, admin_allow_commands="on"):
        new = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}
        assert (await made.http.put("/api/admin/mcp", headers=AUTH, json=new)).status_code == 200


# -- usage limits -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '{"daily_usd": 1e-07}',
        '{"daily_usd": 0.001}',
        '{"daily_usd": 1e308}',
        '{"weekly_usd": 1e20}',
        '{"daily_usd": 1000001}',
        '{"daily_usd": NaN}',
        '{"daily_usd": Infinity}',
        '{"daily_usd": 1e400}',
        '{"daily_usd": -1}',
        '{"daily_usd": ' + "9" * 400 + "}",
    ],
)
async def test_a_usage_limit_outside_a_cent_to_a_million_dollars_is_refused_and_not_stored(
    admin: Admin, body: str
) -> None:
    response = await admin.http.put(
        "/api/admin/usage/telegram/7/limits",
        headers={**AUTH, "Content-Type": "application/json"},
        content=body,
    )
    assert response.status_code == 422, response.text
    override = (await admin.ledger.snapshot("telegram", "7")).override
    assert (override.daily_micros, override.weekly_micros) == (None, None)


async def test_zero_still_means_unlimited_and_a_cent_is_a_limit(admin: Admin) -> None:
    response = await admin.http.put(
        "/api/admin/usage/telegram/7/limits",
        headers=AUTH,
        json={"daily_usd": 0, "weekly_usd": 0.01},
    )
    assert response.status_code == 200
    assert response.json()["daily"]["limit_micros"] == 0
    assert response.json()["weekly"]["limit_micros"] == 10_000


# -- nesting and wrong keys -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/api/admin/mcp"),
        ("PUT", "/api/admin/usage/telegram/7/limits"),
        ("POST", "/api/admin/usage/telegram/7/reset"),
    ],
)
async def test_an_admin_body_nested_900_levels_is_a_400_not_a_500(
    admin: Admin, method: str, path: str
) -> None:
    body = '{"mcpServers": ' + "[" * 900 + "]" * 900 + "}"
    response = await admin.http.request(
        method, path, headers={**AUTH, "Content-Type": "application/json"}, content=body
    )
    assert response.status_code == 400, response.text
    assert "nested deeper" in response.json()["error"]


async def test_wrong_admin_keys_are_rate_limited_per_address_and_logged_without_the_key(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    guesses = [f"guess-{i}-0123456789abcdefghij" for i in range(10)]
    with capture_logs() as logs:
        async for made in _admin(redis, keys, tmp_path, client=("10.9.9.9", 5000)):
            for guess in guesses:
                wrong = await made.http.get(
                    "/api/admin/config", headers={"Authorization": f"Bearer {guess}"}
                )
                assert wrong.status_code == 401
            limited = await made.http.get("/api/admin/mcp", headers=AUTH)
            assert limited.status_code == 429
            assert 1 <= int(limited.headers["Retry-After"]) <= 60
            assert set(limited.json()) == {"error"}
        async for other in _admin(redis, keys, tmp_path, client=("10.9.9.10", 5000)):
            assert (await other.http.get("/api/admin/config", headers=AUTH)).status_code == 200
    failed = [e for e in logs if e["event"] == "admin.auth_failed"]
    assert len(failed) == 10 and failed[0]["client"] == "10.9.9.9"
    assert failed[0]["route"] == "/api/admin/config"
    for guess in (*guesses, ADMIN_KEY):
        assert guess not in str(logs)
