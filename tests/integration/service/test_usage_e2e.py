"""Usage budgets end to end, with the service running as `switchboard serve` runs it: Telegram
(fake Bot API, webhook mode) → manager → an `openai:` model on the fake OpenAI-compatible server
that reports an OpenRouter-style cost of $0.01 per call → Redis; the daily budget is $0.03.

Three turns are answered, the fourth is refused with the reset time and no model call, `/usage`
shows 100%, another user is unaffected, the admin API shows the raw amounts, and
`switchboard usage reset` lets the user talk again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from service.app import running_service
from service.cli_admin import add_admin_commands
from service.settings import Settings
from storage import Keys, UsageLedger, connect
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

TG_SECRET = "usage-e2e-webhook-secret"
ADMIN_KEY = "usage-e2e-admin-key-0123456789"
ANN = FakeTelegram.user(7, "Ann")
BOB = FakeTelegram.user(8, "Bob")


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeTelegram, FakeOpenAI]]:
    tg, model = FakeTelegram(), FakeOpenAI(cost=0.01)
    await tg.start()
    await model.start()
    try:
        yield tg, model
    finally:
        await model.stop()
        await tg.stop()


async def _cli(*args: str) -> tuple[int, str]:
    """`switchboard ARGS` through the real argparse wiring, in a thread (it runs its own loop)."""
    parser = argparse.ArgumentParser(prog="switchboard")
    add_admin_commands(parser.add_subparsers(dest="command"))
    parsed = parser.parse_args(args)
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return int(parsed.func(parsed))

    code = await asyncio.to_thread(run)
    return code, out.getvalue()


async def test_budget_refuses_the_fourth_turn_until_the_admin_resets_it(
    fakes: tuple[FakeTelegram, FakeOpenAI],
    redis_url: str,
    redis_cluster: bool,
    prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tg, model = fakes
    monkeypatch.chdir(tmp_path)  # the CLI reads settings from here: no .env
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("SWITCHBOARD_REDIS_PREFIX", prefix)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        http_port=0,
        access="open",
        admin_key=ADMIN_KEY,
        model="openai:gpt-4o-mini",
        openai_base_url=model.base_url,
        openai_api_key=API_KEY,
        budget_daily_usd=0.03,
        telegram_bot_token=TOKEN,
        telegram_api_base=tg.base_url,
        telegram_mode="webhook",
        telegram_webhook_secret=TG_SECRET,
        # the provider-reported cost (usage.cost) is read from whole responses: langchain-openai
        # keeps only token counts of a streamed one (README, Budgets)
        streaming="off",
    )
    client = connect(redis_url, cluster=redis_cluster)
    ledger = UsageLedger(client, keys=Keys(prefix))
    async with (
        running_service(settings) as core,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{core.http_port}") as http,
    ):

        def texts(chat_id: int) -> list[str]:
            return [
                str(c.get("text", ""))
                for c in tg.calls_to("sendMessage")
                if str(c.get("chat_id")) == str(chat_id)
            ]

        async def say(user: dict[str, object], text: str) -> None:
            update = tg.say(tg.dm(user), user, text, push=False)
            response = await http.post(
                "/telegram/webhook",
                content=json.dumps(update),
                headers={
                    "content-type": "application/json",
                    "X-Telegram-Bot-Api-Secret-Token": TG_SECRET,
                },
            )
            assert response.status_code == 200

        async def answered(user: dict[str, object], text: str) -> None:
            await say(user, text)
            await wait_until(lambda: f"You said: {text}" in texts(int(user["id"])), timeout=20)  # type: ignore[call-overload]

        for n in range(1, 4):
            await answered(ANN, f"turn {n}")
        # each turn is recorded right after its reply: wait until all three have landed
        await wait_until(
            lambda: _spent(ledger, "7", 30_000),
            timeout=10,
        )
        assert len(model.requests) == 3

        await say(ANN, "turn 4")
        notice = await wait_until(lambda: [t for t in texts(7) if "usage limit" in t], timeout=20)
        (text,) = notice
        assert "daily" in text
        assert re.search(r"\d{4}-\d\d-\d\d 00:00 UTC \(in \d+ h\)", text)
        assert "$" not in text and "0.03" not in text
        assert "You said: turn 4" not in texts(7)
        assert len(model.requests) == 3  # refused before any model call

        await say(ANN, "/usage")
        await wait_until(lambda: [t for t in texts(7) if "100.0%" in t], timeout=20)

        await answered(BOB, "hello from bob")
        assert len(model.requests) == 4

        shown = await http.get(
            "/api/admin/usage/telegram/7", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
        )
        assert shown.status_code == 200
        daily = shown.json()["daily"]
        assert daily["used_micros"] == 30_000 and daily["limit_micros"] == 30_000
        assert daily["exceeded"] is True

        code, out = await _cli("usage", "reset", "telegram", "7")
        assert code == 0, out
        await answered(ANN, "back again")
        assert len(model.requests) == 5

        metrics = (await http.get("/metrics")).text
        assert re.search(
            r'switchboard_model_spend_microdollars_total\{model="gpt-4o-mini",platform="telegram"\}',
            metrics,
        )
    await client.aclose()


async def _spent(ledger: UsageLedger, user_id: str, micros: int) -> bool:
    return (await ledger.snapshot("telegram", user_id)).daily_micros >= micros


async def test_a_streamed_turn_is_charged_from_its_token_counts_and_the_price(
    fakes: tuple[FakeTelegram, FakeOpenAI],
    redis_url: str,
    redis_cluster: bool,
    prefix: str,
    tmp_path: Path,
) -> None:
    tg, model = fakes
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        http_port=0,
        access="open",
        model="openai:gpt-4o-mini",
        openai_base_url=model.base_url,
        openai_api_key=API_KEY,
        budget_daily_usd=1.0,
        model_price="1000,1000",  # USD per million tokens: any token costs a visible amount
        telegram_bot_token=TOKEN,
        telegram_api_base=tg.base_url,
        telegram_mode="webhook",
        telegram_webhook_secret=TG_SECRET,
        streaming="on",
    )
    ledger = UsageLedger(connect(redis_url, cluster=redis_cluster), keys=Keys(prefix))
    async with (
        running_service(settings) as core,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{core.http_port}") as http,
    ):
        update = tg.say(tg.dm(ANN), ANN, "a streamed question", push=False)
        response = await http.post(
            "/telegram/webhook",
            content=json.dumps(update),
            headers={
                "content-type": "application/json",
                "X-Telegram-Bot-Api-Secret-Token": TG_SECRET,
            },
        )
        assert response.status_code == 200
        await wait_until(lambda: _spent(ledger, "7", 1), timeout=20)
    assert model.requests[-1].body.get("stream") is True  # it really was streamed
