"""The console's security properties over HTTP, on the real app and real Redis: cookie flags,
headers, CSRF, the wrong-key lockout it shares with the JSON admin API, logout, and the pages
that change state (limits, feedback) refusing what the API refuses."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from agent import McpConfigFile
from channels.message import InboundMessage, Platform
from channels.usage import Budget, UsageDesk
from service.console import ConsoleSources
from service.http import build_http_app
from service.settings import Settings
from storage import (
    Accounts,
    ConsoleSessions,
    FailureLog,
    FeedbackStore,
    Inbox,
    Keys,
    Leases,
    Links,
    RedisCheckpointSaver,
    ThreadMap,
    ThreadQueue,
    UsageLedger,
)
from switchboard.feedback import VoteRecord, VoteValue
from tests.fakes.recording_adapter import RecordingAdapter
from tests.integration.storage.poisoned import poison_messages

ADMIN_KEY = "console-http-admin-key-0123456789"
_CSRF = re.compile(r'name="(?:csrf)" value="([^"]+)"')


@dataclass
class Console:
    http: httpx.AsyncClient
    redis: aioredis.Redis
    keys: Keys

    async def log_in(self, key: str = ADMIN_KEY) -> httpx.Response:
        form = await self.http.get("/admin/login")
        (token,) = _CSRF.findall(form.text)
        return await self.http.post("/admin/login", data={"csrf": token, "admin_key": key})

    async def csrf(self, path: str = "/admin/accounts") -> str:
        return _CSRF.findall((await self.http.get(path)).text)[0]


async def _console(
    redis: aioredis.Redis,
    keys: Keys,
    tmp_path: Path,
    *,
    base_url: str,
    admin_key: str | None = ADMIN_KEY,
    show_text: str = "off",
    mcp_file: McpConfigFile | None = None,
) -> AsyncIterator[Console]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        admin_key=admin_key,
        admin_show_text=show_text,
    )

    async def ready() -> bool:
        return True

    accounts, links = Accounts(redis, keys=keys), Links(redis, keys=keys)
    usage = UsageDesk(ledger=UsageLedger(redis, keys=keys), budget=Budget.from_usd(1, 0))
    app = build_http_app(
        settings=settings,
        accounts=accounts,
        links=links,
        ready=ready,
        usage=usage,
        mcp_file=mcp_file,
        console=ConsoleSources(
            settings=settings,
            accounts=accounts,
            links=links,
            sessions=ConsoleSessions(redis, keys=keys),
            failures=FailureLog(redis, keys=keys),
            inbox=Inbox(redis, keys=keys),
            leases=Leases(redis, keys=keys),
            redis=redis,
            threads=ThreadMap(redis, keys=keys),
            queue=ThreadQueue(redis, keys=keys),
            checkpoints=RedisCheckpointSaver(redis, prefix=keys.prefix),
            usage=usage,
            feedback=FeedbackStore(redis, keys=keys),
        ),
    )
    transport = httpx.ASGITransport(app=app, client=("10.9.8.7", 5000))
    async with httpx.AsyncClient(transport=transport, base_url=base_url) as http:
        yield Console(http, redis, keys)


@pytest.fixture
async def console(redis: aioredis.Redis, keys: Keys, tmp_path: Path) -> AsyncIterator[Console]:
    async for made in _console(redis, keys, tmp_path, base_url="http://sb.test"):
        yield made


async def test_login_sets_a_strict_httponly_session_cookie_for_admin_pages_only(
    console: Console,
) -> None:
    response = await console.log_in()
    assert response.status_code == 303 and response.headers["location"] == "/admin"
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("sb_console="))
    flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert {"httponly", "path", "max-age"} <= flags and "secure" not in flags
    assert "SameSite=strict" in cookie and "Path=/admin" in cookie
    assert (await console.http.get("/admin")).status_code == 200


async def test_over_https_the_session_cookie_is_secure(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    async for made in _console(redis, keys, tmp_path, base_url="https://sb.test"):
        response = await made.log_in()
        cookie = next(c for c in response.headers.get_list("set-cookie") if "sb_console=" in c)
        assert "Secure" in cookie


async def test_every_page_forbids_scripts_framing_and_caching(console: Console) -> None:
    login = await console.http.get("/admin/login")
    assert "default-src 'none'" in login.headers["content-security-policy"]
    await console.log_in()
    assert (await console.http.get("/admin/login")).headers["location"] == "/admin"
    for path in (
        "/admin",
        "/admin/failures",
        "/admin/accounts",
        "/admin/links",
        "/admin/usage",
        "/admin/feedback",
        "/admin/conversations",
        "/admin/mcp",
    ):
        response = await console.http.get(path)
        assert response.status_code == 200, path
        assert response.headers["cache-control"] == "no-store"
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert "script" not in response.headers["content-security-policy"]
        assert "<script" not in response.text
        assert response.headers["x-frame-options"] == "DENY"


async def test_a_page_without_a_session_goes_to_the_login(console: Console) -> None:
    response = await console.http.get("/admin/accounts")
    assert response.status_code == 303 and response.headers["location"] == "/admin/login"


async def test_a_tampered_session_cookie_is_refused(console: Console) -> None:
    await console.log_in()
    cookie = console.http.cookies["sb_console"]
    session_id, _, mac = cookie.rpartition(".")
    console.http.cookies.clear()
    console.http.cookies.set("sb_console", f"{session_id}x.{mac}", path="/admin")
    assert (await console.http.get("/admin")).status_code == 303


async def test_the_login_form_needs_its_own_csrf_token(console: Console) -> None:
    await console.http.get("/admin/login")
    refused = await console.http.post(
        "/admin/login", data={"csrf": "made-up", "admin_key": ADMIN_KEY}
    )
    assert refused.status_code == 403 and "sb_console=" not in str(refused.headers)


async def test_a_post_without_the_sessions_csrf_token_changes_nothing(
    console: Console, redis: aioredis.Redis, keys: Keys
) -> None:
    await console.log_in()
    for token in ("", "forged", await console.csrf() + "x"):
        refused = await console.http.post(
            "/admin/accounts", data={"csrf": token, "action": "create", "name": "mallory"}
        )
        assert refused.status_code == 403
    assert await Accounts(redis, keys=keys).get("mallory") is None


async def test_another_sessions_csrf_token_is_refused(
    console: Console, redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    async for other in _console(redis, keys, tmp_path, base_url="http://sb.test"):
        await other.log_in()
        theirs = await other.csrf()
    await console.log_in()
    refused = await console.http.post(
        "/admin/accounts", data={"csrf": theirs, "action": "create", "name": "mallory"}
    )
    assert refused.status_code == 403


async def test_wrong_keys_lock_out_the_console_and_the_api_together_and_are_not_logged(
    console: Console,
) -> None:
    wrong = "not-the-admin-key-000000000000"
    with capture_logs() as logs:
        for _ in range(10):
            assert (await console.log_in(wrong)).status_code == 401
    assert not [e for e in logs if wrong in str(e)]
    assert [e["route"] for e in logs if e["event"] == "admin.auth_failed"] == ["/admin/login"] * 10
    limited = await console.log_in(ADMIN_KEY)  # the right key, but this address is locked out
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    api = await console.http.get(
        "/api/admin/config", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert api.status_code == 429


async def test_logout_ends_the_session_even_for_a_copied_cookie(console: Console) -> None:
    await console.log_in()
    copied = console.http.cookies["sb_console"]
    out = await console.http.post("/admin/logout", data={"csrf": await console.csrf()})
    assert out.status_code == 303 and out.headers["location"] == "/admin/login"
    console.http.cookies.set("sb_console", copied, path="/admin")
    assert (await console.http.get("/admin")).status_code == 303


async def test_the_created_key_is_shown_once(console: Console) -> None:
    await console.log_in()
    created = await console.http.post(
        "/admin/accounts", data={"csrf": await console.csrf(), "action": "create", "name": "acme"}
    )
    (key,) = re.findall(r'id="api-key">([^<]+)<', created.text)
    assert created.headers["cache-control"] == "no-store"
    assert await Accounts(console.redis, keys=console.keys).authenticate(key) is not None
    assert key not in (await console.http.get("/admin/accounts")).text


@pytest.mark.parametrize("daily", ["0.001", "1e308", "nan", "lots"])
async def test_a_limit_the_api_refuses_is_refused_here_too(console: Console, daily: str) -> None:
    await console.log_in()
    refused = await console.http.post(
        "/admin/usage",
        data={
            "csrf": await console.csrf(),
            "action": "limits",
            "platform": "slack",
            "user_id": "U1",
            "daily_usd": daily,
        },
    )
    assert refused.status_code == 422
    snapshot = await UsageLedger(console.redis, keys=console.keys).snapshot("slack", "U1")
    assert snapshot.override.daily_micros is None


async def test_a_limit_set_here_is_the_one_the_api_reports(console: Console) -> None:
    await console.log_in()
    saved = await console.http.post(
        "/admin/usage",
        data={
            "csrf": await console.csrf(),
            "action": "limits",
            "platform": "slack",
            "user_id": "U1",
            "daily_usd": "2.5",
        },
    )
    assert saved.status_code == 200 and "Limits saved." in saved.text
    api = await console.http.get(
        "/api/admin/usage/slack/U1", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert api.json()["daily"]["limit_usd"] == 2.5 and api.json()["daily"]["limit_overridden"]


async def test_recent_votes_are_listed(console: Console) -> None:
    store = FeedbackStore(console.redis, keys=console.keys)
    now = time.time()
    await store.record(VoteRecord("slack", "U1", "run-good", VoteValue.UP, now - 60))
    await store.record(VoteRecord("telegram", "7", "run-bad", VoteValue.DOWN, now - 30))
    await console.log_in()
    shown = await console.http.get("/admin/feedback", params={"since": "1h"})
    assert shown.status_code == 200
    assert "1 up, 1 down" in shown.text
    assert shown.text.index("run-bad") < shown.text.index("run-good")  # newest first
    assert (await console.http.get("/admin/feedback", params={"since": "soon"})).status_code == 422


async def test_without_an_admin_key_the_console_is_off(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    async for made in _console(redis, keys, tmp_path, base_url="http://sb.test", admin_key=None):
        assert (await made.http.get("/admin")).status_code == 404
        assert (await made.http.get("/admin/login")).status_code == 404


@pytest.mark.parametrize("show_text", ["off", "on"])
async def test_a_conversations_turns_show_run_ids_and_text_only_when_allowed(
    make_manager, redis: aioredis.Redis, keys: Keys, tmp_path: Path, show_text: str
) -> None:
    manager = await make_manager()
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    for n, text in enumerate(["echo first secret words", "echo second secret words"]):
        await manager.deliver(
            InboundMessage(
                platform=Platform.SLACK,
                workspace_id="T1",
                chat_id="D7",
                sender_id="U1",
                sender_name="alice",
                text=text,
                provider_message_id=f"conv-{n}",
                is_dm=True,
            )
        )
        await manager.idle()
    async for console in _console(
        redis, keys, tmp_path, base_url="http://sb.test", show_text=show_text
    ):
        await console.log_in()
        listed = await console.http.get("/admin/conversations")
        (href,) = re.findall(r'href="(/admin/conversations\?thread=[^"]+)"', listed.text)
        assert "slack" in listed.text
        shown = await console.http.get(href.replace("&amp;", "&"))
        assert shown.status_code == 200
        rows = re.findall(r"<tr><td>(.*?)</tr>", shown.text, re.S)
        assert len(rows) == 2
        assert re.search(r"[0-9a-f-]{36}", rows[0])  # the newest turn's run id
        if show_text == "on":
            assert "echo second secret words" in rows[0] and "first secret words" in rows[1]
        else:
            assert "secret words" not in shown.text
            assert "24 characters" in rows[0]


async def test_mcp_servers_are_toggled_here_but_no_command_is_added_or_changed(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    stored = {
        "mcpServers": {
            "files": {
                "command": "python3",
                "args": ["server.py"],
                "env": {"TOKEN": "sk-abcdef0123456789abcdef"},
            },
        }
    }
    path.write_text(json.dumps(stored))
    async for console in _console(
        redis, keys, tmp_path, base_url="http://sb.test", mcp_file=McpConfigFile(path)
    ):
        await console.log_in()
        shown = await console.http.get("/admin/mcp")
        assert "sk-abcdef0123456789abcdef" not in shown.text and "files" in shown.text
        csrf = await console.csrf("/admin/mcp")
        off = await console.http.post(
            "/admin/mcp", data={"csrf": csrf, "action": "disable", "server": "files"}
        )
        assert off.status_code == 200 and "files disabled." in off.text
        assert json.loads(path.read_text())["mcpServers"]["files"]["enabled"] is False
        for change in (
            {"mcpServers": {"shell": {"command": "sh", "args": ["-c", "id"]}}},
            {"mcpServers": {"files": {"command": "/bin/sh"}}},
        ):
            refused = await console.http.post(
                "/admin/mcp", data={"csrf": csrf, "action": "change", "change": json.dumps(change)}
            )
            assert (
                refused.status_code == 403 and "SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on" in refused.text
            )
        assert json.loads(path.read_text())["mcpServers"]["files"]["command"] == "python3"
        assert "shell" not in json.loads(path.read_text())["mcpServers"]
        deep = "[" * 5000 + "]" * 5000
        refused = await console.http.post(
            "/admin/mcp", data={"csrf": csrf, "action": "change", "change": deep}
        )
        assert refused.status_code == 422


async def test_the_usage_page_lists_the_weeks_biggest_spenders_against_their_limits(
    console: Console,
) -> None:
    ledger = UsageLedger(console.redis, keys=console.keys)
    await ledger.record("telegram", "42", "t1", 1_500_000)  # over the $1 daily budget
    await ledger.record("slack", "U1", "t2", 250_000)
    await console.log_in()
    shown = await console.http.get("/admin/usage")
    rows = re.findall(r"<tr><td><a[^>]*>(.*?)</tr>", shown.text, re.S)
    assert len(rows) == 2
    assert "telegram 42" in rows[0] and "1.5000 of 1.00" in rows[0] and "over a limit" in rows[0]
    assert "slack U1" in rows[1] and "within limits" in rows[1]


async def test_a_broken_form_is_refused_without_a_fault(console: Console) -> None:
    await console.log_in()
    broken = await console.http.post(
        "/admin/accounts",
        content=b"--x\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--x--\r\n",
        headers={"content-type": "multipart/form-data; boundary=x"},
    )
    assert broken.status_code == 400 and "could not be read" in broken.text


async def test_a_malformed_thread_id_is_not_looked_up(console: Console) -> None:
    await console.log_in()
    shown = await console.http.get("/admin/conversations", params={"thread": "x}:lock{y"})
    assert shown.status_code == 404 and "not a thread id" in shown.text


async def test_a_checkpoint_value_naming_a_call_is_shown_as_data_not_run(
    make_manager, redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    """The Conversations page loads the same blobs the saver does: a value overwritten in Redis
    to name `os.system` is never called here either."""
    manager = await make_manager()
    manager.register(RecordingAdapter(deliver=manager.deliver))
    await manager.deliver(
        InboundMessage(
            platform=Platform.SLACK,
            workspace_id="T1",
            chat_id="D8",
            sender_id="U1",
            sender_name="alice",
            text="echo hello",
            provider_message_id="poisoned-0",
            is_dm=True,
        )
    )
    await manager.idle()
    marker = tmp_path / "ran"
    async for console in _console(redis, keys, tmp_path, base_url="http://sb.test"):
        await console.log_in()
        listed = await console.http.get("/admin/conversations")
        (href,) = re.findall(r'href="(/admin/conversations\?thread=[^"]+)"', listed.text)
        url = httpx.URL(href.replace("&amp;", "&"))
        assert await poison_messages(redis, keys, url.params["thread"], marker)
        shown = await console.http.get(str(url))
        assert shown.status_code == 200
        assert re.findall(r"<tr><td>(.*?)</tr>", shown.text, re.S)
    assert not marker.exists()
