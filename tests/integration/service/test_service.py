"""The whole service as `switchboard serve` runs it: settings → Redis → core → three real
adapters → the HTTP app on a real socket. Each platform is a fake on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.app import running_service
from service.settings import Settings
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack, signed_headers
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

TG_SECRET = "service-test-webhook-secret"
SLACK_SECRET = "service-test-signing-secret"
ANN = FakeTelegram.user(7, "Ann")


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeTelegram, FakeSlack, FakeDiscord]]:
    tg, slack = FakeTelegram(), FakeSlack()
    await tg.start()
    await slack.start()
    slack.add_user("U1", "alice")
    discord = await FakeDiscord().start()
    try:
        yield tg, slack, discord
    finally:
        await discord.close()
        await slack.stop()
        await tg.stop()


def settings_for(
    fakes: tuple[FakeTelegram, FakeSlack, FakeDiscord], redis_url: str, prefix: str, data: Path
) -> Settings:
    tg, slack, discord = fakes
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=data,
        http_port=0,
        access="open",
        public_url="https://switchboard.example",
        admin_key="operator-key-123-0123456789abcdef",
        telegram_bot_token=TOKEN,
        telegram_api_base=tg.base_url,
        telegram_mode="webhook",
        telegram_webhook_secret=TG_SECRET,
        slack_bot_token=slack.bot_token,
        slack_signing_secret=SLACK_SECRET,
        slack_api_base=slack.api_base,
        discord_bot_token=discord.token,
        discord_api_base=discord.api_base,
    )


async def test_service_answers_every_platform_through_its_real_endpoints(
    fakes: tuple[FakeTelegram, FakeSlack, FakeDiscord], redis_url: str, prefix: str, tmp_path: Path
) -> None:
    tg, slack, discord = fakes
    settings = settings_for(fakes, redis_url, prefix, tmp_path)
    async with running_service(settings) as core:
        assert {str(a.platform) for a in core.adapters} == {"telegram", "slack", "discord"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{core.http_port}") as http:
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/readyz")).status_code == 200
            (registered,) = tg.calls_to("setWebhook")
            assert registered["url"] == "https://switchboard.example/telegram/webhook"

            update = json.dumps(tg.say(tg.dm(ANN), ANN, "echo via telegram", push=False))
            response = await http.post(
                "/telegram/webhook",
                content=update,
                headers={
                    "content-type": "application/json",
                    "X-Telegram-Bot-Api-Secret-Token": TG_SECRET,
                },
            )
            assert response.status_code == 200

            event = {
                "type": "message",
                "user": "U1",
                "text": "echo via slack",
                "ts": "1690000000.000001",
                "channel": "D1",
                "channel_type": "im",
                "team": slack.team_id,
            }
            body = json.dumps(slack.event_callback(event, event_id="EvSERVICE1"))
            headers = {"content-type": "application/json", **signed_headers(SLACK_SECRET, body)}
            assert (
                await http.post("/slack/events", content=body, headers=headers)
            ).status_code == 200

            await discord.user_message("echo via discord", dm=True)

            def answered() -> bool:
                tg_texts = [c.get("text", "") for c in tg.calls_to("sendMessage")]
                slack_texts = [c.params.get("text", "") for c in slack.calls_to("chat.postMessage")]
                dc_texts = [
                    m["content"] for m in discord.bot_messages(discord.dm_channel(discord.alice))
                ]
                return (
                    "via telegram" in tg_texts
                    and "via slack" in slack_texts
                    and "via discord" in dc_texts
                )

            await wait_until(answered, timeout=20)
            metrics = (await http.get("/metrics")).text
            for platform in ("telegram", "slack", "discord"):
                assert f'switchboard_messages_in_total{{platform="{platform}"}}' in metrics
            config = await http.get(
                "/api/admin/config",
                headers={"Authorization": "Bearer operator-key-123-0123456789abcdef"},
            )
            assert config.status_code == 200
            shown = json.dumps(config.json())
            for secret in (TOKEN, TG_SECRET, SLACK_SECRET, slack.bot_token, discord.token):
                assert secret not in shown


async def test_linked_mode_refuses_an_unlinked_telegram_dm_with_link_instructions(
    fakes: tuple[FakeTelegram, FakeSlack, FakeDiscord], redis_url: str, prefix: str, tmp_path: Path
) -> None:
    tg, _, _ = fakes
    settings = settings_for(fakes, redis_url, prefix, tmp_path).model_copy(
        update={"access": "linked"}
    )
    async with (
        running_service(settings) as core,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{core.http_port}") as http,
    ):
        update = json.dumps(tg.say(tg.dm(ANN), ANN, "hello", push=False))
        await http.post(
            "/telegram/webhook",
            content=update,
            headers={
                "content-type": "application/json",
                "X-Telegram-Bot-Api-Secret-Token": TG_SECRET,
            },
        )

        def notice() -> list[Any]:
            return [c for c in tg.calls_to("sendMessage") if "/link" in c.get("text", "")]

        await wait_until(notice, timeout=20)
        assert not [c for c in tg.calls_to("sendMessage") if "Hello!" in c.get("text", "")]


async def test_shutdown_lets_a_turn_in_flight_reply_before_the_adapters_stop(
    fakes: tuple[FakeTelegram, FakeSlack, FakeDiscord], redis_url: str, prefix: str, tmp_path: Path
) -> None:
    tg, _, _ = fakes
    settings = settings_for(fakes, redis_url, prefix, tmp_path)
    async with (
        running_service(settings) as core,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{core.http_port}") as http,
    ):
        update = json.dumps(tg.say(tg.dm(ANN), ANN, "slow 0.5", push=False))
        response = await http.post(
            "/telegram/webhook",
            content=update,
            headers={
                "content-type": "application/json",
                "X-Telegram-Bot-Api-Secret-Token": TG_SECRET,
            },
        )
        assert response.status_code == 200
        await wait_until(lambda: tg.calls_to("sendChatAction"))
    # the service has shut down; the answer went out first
    assert "Done after 0.5 s." in [c.get("text") for c in tg.calls_to("sendMessage")]
