"""Private answers from a Telegram group: the real aiogram client polling the fake Bot API, the
real manager with `access=linked` on real Redis. A bot may not open a private chat (Telegram
answers 403 until the person does, or once they blocked it), and then `/link`'s one-time URL
must not land in the group: the group hears only how to open the chat, and the token is void."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from storage import Keys, Links, LinkToken, TokenState
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

PUBLIC_URL = "https://switchboard.example"
ANN = FakeTelegram.user(7, "Ann")
GROUP_ID = -100123


@pytest.fixture
async def stack(fake: FakeTelegram, make_manager) -> AsyncIterator[tuple[Manager, TelegramAdapter]]:  # type: ignore[no-untyped-def]
    manager = await make_manager(access="linked", public_url=PUBLIC_URL)
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        yield manager, adapter
    finally:
        await adapter.stop()


async def link_in_group(fake: FakeTelegram, manager: Manager) -> list[str]:
    """Ann, a group admin, sends `/link@bot` in the group; what the group then shows."""
    fake.admins[GROUP_ID].add(ANN["id"])
    fake.say(fake.group(GROUP_ID), ANN, f"/link@{fake.username}")
    await wait_until(lambda: fake.bot_texts(GROUP_ID) or fake.bot_texts(ANN["id"]))
    await manager.idle()
    return fake.bot_texts(GROUP_ID)


async def minted(redis: aioredis.Redis, keys: Keys) -> list[LinkToken]:
    """Every link token made under this test's prefix, as the link API would judge it."""
    links = Links(redis, keys=keys)
    found = [key async for key in redis.scan_iter(match=keys.link_token("*"))]
    names = [(k.decode() if isinstance(k, bytes) else k).rsplit(":", 1)[1] for k in found]
    return [await links.peek(name) for name in names]


async def test_link_in_a_group_whose_admin_never_opened_a_dm_never_shows_the_token(
    fake: FakeTelegram,
    stack: tuple[Manager, TelegramAdapter],
    redis: aioredis.Redis,
    keys: Keys,
) -> None:
    manager, _ = stack
    group = await link_in_group(fake, manager)
    dm_refused = [c for c in fake.calls if c.method == "sendMessage" and c.status == 403]
    assert [c.params["chat_id"] for c in dm_refused] == [ANN["id"]]
    (notice,) = group
    assert notice.startswith("Ann, I couldn't message you privately")
    assert f"t.me/{fake.username}" in notice
    assert "/link/" not in notice and PUBLIC_URL not in notice
    (token,) = await minted(redis, keys)
    assert token.token not in notice
    assert token.state is TokenState.EXPIRED  # never shown, so nobody may confirm it


async def test_link_from_an_admin_who_blocked_the_bot_never_shows_the_token(
    fake: FakeTelegram,
    stack: tuple[Manager, TelegramAdapter],
    redis: aioredis.Redis,
    keys: Keys,
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, "/start", push=False)
    fake.blocked.add(ANN["id"])
    (notice,) = await link_in_group(fake, manager)
    assert "couldn't message you privately" in notice and PUBLIC_URL not in notice
    assert fake.bot_texts(ANN["id"]) == []
    (token,) = await minted(redis, keys)
    assert token.state is TokenState.EXPIRED


async def test_link_in_a_group_goes_to_the_admins_open_dm_only(
    fake: FakeTelegram,
    stack: tuple[Manager, TelegramAdapter],
    redis: aioredis.Redis,
    keys: Keys,
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, "/start", push=False)  # Ann has opened a DM with the bot
    assert await link_in_group(fake, manager) == []
    (offer,) = fake.bot_texts(ANN["id"])
    (token,) = await minted(redis, keys)
    assert f"{PUBLIC_URL}/link/{token.token}" in offer
    assert token.state is TokenState.PENDING
