"""Native commands through the whole service (`running_service`, real adapters, fake platforms):
the menus and application commands appear at start-up, `POST /slack/commands` is routed and
signature-checked, and answers come back privately through the platforms' own channels."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from service.app import running_service
from service.settings import Settings
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack, signed_headers
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

SLACK_SECRET = "native-commands-signing-secret"


@dataclass
class Fakes:
    http: httpx.AsyncClient
    telegram: FakeTelegram
    slack: FakeSlack
    discord: FakeDiscord


@pytest.fixture
async def service(redis_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[Fakes]:
    telegram, slack = FakeTelegram(), FakeSlack()
    await telegram.start()
    await slack.start()
    slack.add_user("U1", "alice")
    discord = await FakeDiscord().start()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        http_port=0,
        access="open",
        telegram_bot_token=TOKEN,
        telegram_api_base=telegram.base_url,
        slack_bot_token=slack.bot_token,
        slack_signing_secret=SLACK_SECRET,
        slack_api_base=slack.api_base,
        slack_command="sb",
        discord_bot_token=discord.token,
        discord_api_base=discord.api_base,
        discord_command_guilds=discord.guild_id,
    )
    try:
        async with running_service(settings) as core:
            base = f"http://127.0.0.1:{core.http_port}"
            async with httpx.AsyncClient(base_url=base) as http:
                yield Fakes(http, telegram, slack, discord)
    finally:
        await discord.close()
        await slack.stop()
        await telegram.stop()


async def test_menus_and_application_commands_are_there_after_start(service: Fakes) -> None:
    scopes = ("all_private_chats", "all_group_chats", "all_chat_administrators")
    keys = [(json.dumps({"type": scope}), "") for scope in scopes]
    await wait_until(lambda: all(key in service.telegram.menus for key in keys))
    discord = service.discord
    await wait_until(lambda: discord.guild_id in discord.app_commands)
    assert "link" in [c["name"] for c in discord.app_commands[discord.guild_id]]
    assert None not in discord.app_commands  # SWITCHBOARD_DISCORD_COMMAND_GUILDS: guild only


async def test_slack_slash_command_is_served_at_slack_commands(service: Fakes) -> None:
    payload = service.slack.slash_command("status", command="/sb")
    body = urlencode(payload)
    form = {"content-type": "application/x-www-form-urlencoded"}
    forged = await service.http.post(
        "/slack/commands", content=body, headers=form | signed_headers("wrong", body)
    )
    assert forged.status_code == 401
    signed = await service.http.post(
        "/slack/commands", content=body, headers=form | signed_headers(SLACK_SECRET, body)
    )
    assert signed.status_code == 200
    await wait_until(lambda: service.slack.responses_to(payload))
    [answer] = service.slack.responses_to(payload)
    assert answer["response_type"] == "ephemeral"
    assert answer["text"].startswith("No conversation yet here.")


async def test_discord_slash_command_is_answered_privately(service: Fakes) -> None:
    discord = service.discord
    await wait_until(lambda: discord.guild_id in discord.app_commands)
    await discord.slash("help")
    await wait_until(lambda: discord.followups)
    [answer] = discord.followups
    assert answer.ephemeral and "/usage — " in answer.content
