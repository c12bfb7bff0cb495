"""Usage admin on real Redis: `switchboard usage show|reset|limit` (through the real argparse
wiring) and the HTTP admin API behind the admin key, both showing raw amounts and limits."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from channels.usage import Budget, UsageDesk
from service.cli_admin import add_admin_commands
from service.http import build_http_app
from service.settings import Settings
from storage import Accounts, Keys, Links, UsageLedger

ADMIN = "usage-admin-key-0123456789abc"


async def _cli(*args: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="switchboard")
    add_admin_commands(parser.add_subparsers(dest="command"))
    parsed = parser.parse_args(args)
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return int(parsed.func(parsed))

    code = await asyncio.to_thread(run)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, redis_url: str, prefix: str, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("SWITCHBOARD_REDIS_PREFIX", prefix)
    monkeypatch.setenv("SWITCHBOARD_BUDGET_DAILY_USD", "0.05")
    monkeypatch.setenv("SWITCHBOARD_BUDGET_WEEKLY_USD", "1")


@pytest.fixture
def ledger(redis: aioredis.Redis, keys: Keys) -> UsageLedger:
    return UsageLedger(redis, keys=keys)


@pytest.mark.usefixtures("cli_env")
async def test_cli_show_prints_raw_amounts_and_limits(ledger: UsageLedger) -> None:
    await ledger.record("telegram", "7", "r1", 50_000)
    code, out, _ = await _cli("usage", "show", "telegram", "7")
    assert code == 0
    daily, weekly = out.splitlines()[2:4]
    assert daily.split()[:5] == ["daily", daily.split()[1], "0.050000", "0.050000", "100.0%"]
    assert weekly.split()[2:5] == ["0.050000", "1.000000", "5.0%"]


@pytest.mark.usefixtures("cli_env")
async def test_cli_reset_is_daily_only_unless_weekly_is_asked(ledger: UsageLedger) -> None:
    await ledger.record("telegram", "7", "r1", 50_000)
    code, _, _ = await _cli("usage", "reset", "telegram", "7")
    assert code == 0
    snap = await ledger.snapshot("telegram", "7")
    assert (snap.daily_micros, snap.weekly_micros) == (0, 50_000)

    code, _, _ = await _cli("usage", "reset", "telegram", "7", "--weekly")
    assert code == 0
    snap = await ledger.snapshot("telegram", "7")
    assert (snap.daily_micros, snap.weekly_micros) == (0, 0)


@pytest.mark.usefixtures("cli_env")
async def test_cli_limit_sets_and_drops_an_override(ledger: UsageLedger) -> None:
    code, out, _ = await _cli("usage", "limit", "slack", "U1", "--daily", "2.5")
    assert code == 0 and "2.500000 (override)" in out
    code, out, _ = await _cli("usage", "limit", "slack", "U1", "--weekly", "0")
    assert code == 0
    override = (await ledger.snapshot("slack", "U1")).override
    assert (override.daily_micros, override.weekly_micros) == (2_500_000, 0)
    code, _, _ = await _cli("usage", "limit", "slack", "U1", "--daily", "default")
    assert (await ledger.snapshot("slack", "U1")).override.daily_micros is None


@pytest.mark.usefixtures("cli_env")
async def test_cli_refuses_an_unknown_platform_with_one_line() -> None:
    code, out, err = await _cli("usage", "show", "myspace", "7")
    assert code == 1 and out == ""
    assert err.strip().startswith("switchboard: unknown platform 'myspace'")
    assert len(err.strip().splitlines()) == 1


@pytest.fixture
async def http(
    redis: aioredis.Redis, keys: Keys, prefix: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_prefix=prefix,
        data_dir=tmp_path,
        admin_key=ADMIN,
    )
    desk = UsageDesk(
        ledger=UsageLedger(redis, keys=keys), budget=Budget.from_usd(daily=0.05, weekly=0)
    )

    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=settings,
        accounts=Accounts(redis, keys=keys),
        links=Links(redis, keys=keys),
        ready=ready,
        usage=desk,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://switchboard.test") as client:
        yield client


AUTH = {"Authorization": f"Bearer {ADMIN}"}


async def test_http_usage_needs_the_admin_key(http: httpx.AsyncClient) -> None:
    assert (await http.get("/api/admin/usage/telegram/7")).status_code == 401
    wrong = await http.get("/api/admin/usage/telegram/7", headers={"Authorization": "Bearer x"})
    assert wrong.status_code == 401 and ADMIN not in wrong.text


async def test_http_shows_resets_and_overrides(
    http: httpx.AsyncClient, ledger: UsageLedger
) -> None:
    await ledger.record("telegram", "7", "r1", 50_000)
    shown = (await http.get("/api/admin/usage/telegram/7", headers=AUTH)).json()
    assert shown["daily"]["used_usd"] == 0.05 and shown["daily"]["limit_usd"] == 0.05
    assert shown["daily"]["percent_used"] == 100.0 and shown["daily"]["exceeded"] is True
    assert shown["weekly"]["limit_micros"] == 0 and shown["weekly"]["percent_used"] is None

    reset = await http.post("/api/admin/usage/telegram/7/reset", headers=AUTH, json={})
    assert reset.status_code == 200
    assert reset.json()["daily"]["used_micros"] == 0
    assert reset.json()["weekly"]["used_micros"] == 50_000
    both = await http.post("/api/admin/usage/telegram/7/reset", headers=AUTH, json={"weekly": True})
    assert both.json()["weekly"]["used_micros"] == 0

    limits = await http.put(
        "/api/admin/usage/telegram/7/limits", headers=AUTH, json={"daily_usd": 0.2}
    )
    assert limits.status_code == 200
    assert limits.json()["daily"]["limit_micros"] == 200_000
    assert limits.json()["daily"]["limit_overridden"] is True


async def test_http_rejects_unknown_platforms_and_bad_amounts(http: httpx.AsyncClient) -> None:
    bad = await http.get("/api/admin/usage/myspace/7", headers=AUTH)
    assert bad.status_code == 422 and "unknown platform" in bad.json()["error"]
    negative = await http.put(
        "/api/admin/usage/telegram/7/limits", headers=AUTH, json={"daily_usd": -1}
    )
    assert negative.status_code == 422


@pytest.mark.parametrize(
    ("price", "warned"), [(None, True), ("0.15,0.60", False)], ids=["no-price", "price"]
)
def test_start_up_says_when_a_budget_has_no_price(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path, price: str | None, warned: bool
) -> None:
    from structlog.testing import capture_logs

    from service.app import build_usage_desk

    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        budget_daily_usd=1.0,
        model_price=price,
    )
    with capture_logs() as logs:
        desk = build_usage_desk(settings, redis, keys)
    assert desk.budget.enabled
    assert any(e["event"] == "usage.budget_without_price" for e in logs) is warned
