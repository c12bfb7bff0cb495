"""Votes for operators on real Redis: `switchboard feedback list` (through the real argparse
wiring) and `GET /api/admin/feedback` behind the admin key, newest first, filtered by time."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from service.cli_admin import add_admin_commands
from service.feedback_api import parse_since
from service.http import build_http_app
from service.settings import Settings
from storage import Accounts, FeedbackStore, Keys, Links
from switchboard.feedback import VoteRecord, VoteValue

ADMIN = "feedback-admin-key-0123456789"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
_DAY = 86400.0


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
async def votes(redis: aioredis.Redis, keys: Keys) -> FeedbackStore:
    store = FeedbackStore(redis, keys=keys)
    now = time.time()
    await store.record(VoteRecord("telegram", "42", "run-a", VoteValue.DOWN, now - 3 * _DAY))
    await store.record(VoteRecord("slack", "U1", "run-b", VoteValue.UP, now - 60))
    return store


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, redis_url: str, prefix: str, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("SWITCHBOARD_REDIS_PREFIX", prefix)


@pytest.mark.usefixtures("cli_env", "votes")
async def test_cli_lists_one_line_per_vote_newest_first_and_since_a_time() -> None:
    code, out, _ = await _cli("feedback", "list")
    assert code == 0
    lines = [line.split("\t") for line in out.splitlines()]
    assert [row[:3] for row in lines] == [["slack", "U1", "up"], ["telegram", "42", "down"]]
    assert lines[0][3].endswith("Z") and lines[0][4] == "run-b"
    code, out, _ = await _cli("feedback", "list", "--since", "1d")
    assert code == 0 and [line.split("\t")[0] for line in out.splitlines()] == ["slack"]


@pytest.mark.usefixtures("cli_env")
async def test_cli_refuses_an_unreadable_since_with_one_line() -> None:
    code, out, err = await _cli("feedback", "list", "--since", "last tuesday")
    assert code == 1 and out == ""
    assert err.startswith("switchboard: unreadable time") and len(err.strip().splitlines()) == 1


@pytest.fixture
async def http(
    redis: aioredis.Redis, keys: Keys, prefix: str, tmp_path: Path, votes: FeedbackStore
) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_prefix=prefix,
        data_dir=tmp_path,
        admin_key=ADMIN,
    )

    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=settings,
        accounts=Accounts(redis, keys=keys),
        links=Links(redis, keys=keys),
        ready=ready,
        feedback=votes,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://switchboard.test") as client:
        yield client


async def test_http_feedback_needs_the_admin_key(http: httpx.AsyncClient) -> None:
    assert (await http.get("/api/admin/feedback")).status_code == 401


async def test_http_lists_recent_votes_since_a_time(http: httpx.AsyncClient) -> None:
    everything = (await http.get("/api/admin/feedback", headers=AUTH)).json()["votes"]
    assert [(v["platform"], v["user_id"], v["value"]) for v in everything] == [
        ("slack", "U1", "up"),
        ("telegram", "42", "down"),
    ]
    recent = await http.get("/api/admin/feedback?since=2d&limit=5", headers=AUTH)
    assert [v["run_id"] for v in recent.json()["votes"]] == ["run-b"]
    bad = await http.get("/api/admin/feedback?since=soon", headers=AUTH)
    assert bad.status_code == 422


def test_since_reads_dates_times_epochs_and_spans_ago() -> None:
    assert parse_since("2026-12-01") == 1796083200.0
    assert parse_since("2026-12-01T01:00:00Z") == 1796086800.0
    assert parse_since("1796083200") == 1796083200.0
    assert parse_since("2h", now=10_000.0) == 2_800.0
