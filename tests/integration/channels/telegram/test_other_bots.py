"""Other bots' messages in a Telegram group (`allow_bots`), end to end: the production wiring
(`build_core`, `build_adapters`) with a bindings file, the real aiogram client polling the fake
Bot API, real Redis, the demo model. Telegram's bot-to-bot mode shows a bot another bot's
message when it carries `/cmd@thisbot` or replies to this bot's message (and every one where it
is an admin without privacy mode); the fake delivers them all, so the adapter must choose."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from service.app import Core, build_adapters, build_core, place_policies
from service.settings import Settings
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
DEPLOY_BOT = {"id": 99, "is_bot": True, "first_name": "Deploy", "username": "deploy_bot"}
GROUP_ID = -1001

CoreFactory = Callable[[str], Awaitable[Core]]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def make_core(
    redis: aioredis.Redis, prefix: str, tmp_path: Path, fake: FakeTelegram
) -> AsyncIterator[CoreFactory]:
    """The production core with `rules` as its bindings file, and its Telegram adapter polling."""
    stack = AsyncExitStack()

    async def factory(rules: str) -> Core:
        path = tmp_path / "bindings.yaml"
        path.write_text(rules, encoding="utf-8")
        settings = Settings(
            _env_file=None,
            access="open",
            redis_prefix=prefix,
            data_dir=tmp_path,
            streaming="off",
            bindings=path,
            telegram_bot_token=TOKEN,
            telegram_api_base=fake.base_url,
        )
        core = await stack.enter_async_context(build_core(settings, redis))
        [adapter] = build_adapters(core.settings, core.manager, policy=place_policies(core))
        await adapter.start()
        stack.push_async_callback(adapter.stop)
        return core

    try:
        yield factory
    finally:
        await stack.aclose()


async def settle(fake: FakeTelegram, core: Core) -> None:
    """A person's DM after the group messages: once it is answered, they were all handled."""
    marker = fake.dm(ANN)
    before = len(fake.bot_texts(marker["id"]))
    fake.say(marker, ANN, "ping")
    await wait_until(lambda: len(fake.bot_texts(marker["id"])) > before)
    await core.manager.idle()


def answers_to(fake: FakeTelegram, message: dict[str, Any]) -> list[str]:
    """Our group messages that reply to `message` (an update's message)."""
    mid = message["message_id"]
    return [
        m["text"]
        for m in fake.bot_messages(GROUP_ID)
        if (m.get("reply_to_message") or {}).get("message_id") == mid
    ]


async def test_allow_bots_mentions_answers_another_bot_that_addresses_ours(
    fake: FakeTelegram, make_core: CoreFactory
) -> None:
    core = await make_core("- platform: telegram\n  allow_bots: mentions\n")
    group = fake.group(GROUP_ID)
    plain = fake.say(group, DEPLOY_BOT, "deploy finished")["message"]
    others = fake.say(group, DEPLOY_BOT, "/status")["message"]  # not addressed to us
    mentioned = fake.say(group, DEPLOY_BOT, f"@{fake.username} summarise the deploy")["message"]
    await wait_until(lambda: answers_to(fake, mentioned))
    (answer,) = fake.bot_messages(GROUP_ID)
    replying = fake.say(group, DEPLOY_BOT, "and the rollback?", reply_to=answer)["message"]
    command = fake.say(group, DEPLOY_BOT, f"/help@{fake.username}")["message"]
    await settle(fake, core)

    assert answers_to(fake, mentioned) == ["You said: summarise the deploy"]
    assert answers_to(fake, replying) == ["You said: and the rollback?"]
    (help_text,) = answers_to(fake, command)
    assert help_text.startswith("I'm Switchboard")
    assert answers_to(fake, plain) == [] and answers_to(fake, others) == []
    assert len(fake.bot_messages(GROUP_ID)) == 3


async def test_another_bots_mention_is_ignored_where_no_binding_allows_bots(
    fake: FakeTelegram, make_core: CoreFactory
) -> None:
    core = await make_core("- platform: telegram\n  workspace: '-2002'\n  allow_bots: mentions\n")
    group = fake.group(GROUP_ID)
    fake.say(group, DEPLOY_BOT, f"@{fake.username} summarise the deploy")
    fake.say(group, DEPLOY_BOT, f"/help@{fake.username}")
    fake.say(group, ANN, f"@{fake.username} remember pineapples")  # a person is answered
    await settle(fake, core)
    assert fake.bot_texts(GROUP_ID) == ["You said: remember pineapples"]


async def test_our_own_messages_are_never_taken_even_where_all_bots_are(
    fake: FakeTelegram, make_core: CoreFactory
) -> None:
    core = await make_core("- platform: telegram\n  allow_bots: all\n")
    group = fake.group(GROUP_ID)
    fake.say(group, fake.bot_user, f"@{fake.username} talking to myself")
    fake.say(group, fake.bot_user, f"/help@{fake.username}")
    other = fake.say(group, DEPLOY_BOT, f"@{fake.username} status please")["message"]
    await settle(fake, core)
    assert fake.bot_texts(GROUP_ID) == ["You said: status please"]
    assert answers_to(fake, other) == ["You said: status please"]
