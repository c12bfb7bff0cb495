"""What the inbox holds of a platform event, read from Redis as an ingress left it: the typed
fields a worker needs (a Discord message's own channel, a slash command's answer handles), never
the platform's payload, another person's message it quotes, or a bearer token twice."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from channels.discord import DiscordAdapter
from storage.keys import Keys
from tests.fakes.discord_server import FakeDiscord
from tests.support import wait_until


@pytest.fixture
async def ingress(make_manager: Any, redis: Any) -> AsyncIterator[FakeDiscord]:
    fake = await FakeDiscord().start()
    manager = await make_manager(role="ingress")
    adapter = DiscordAdapter(
        token=fake.token, deliver=manager.deliver, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    manager.register(adapter)
    await adapter.start()
    try:
        yield fake
    finally:
        await adapter.stop()
        await fake.close()


async def _entries(redis: Any, keys: Keys, count: int) -> list[dict[str, Any]]:
    async def enough() -> bool:
        return int(await redis.xlen(keys.inbox())) >= count

    await wait_until(enough, timeout=15)
    rows = await redis.xrange(keys.inbox())
    return [json.loads(fields.get(b"m") or fields["m"]) for _, fields in rows]


async def test_a_discord_mention_is_held_as_its_fields_without_the_gateway_payload(
    ingress: FakeDiscord, redis: Any, keys: Keys
) -> None:
    fake = ingress
    await fake.user_message(f"<@{fake.bot['id']}> summarise the plan")
    (entry,) = await _entries(redis, keys, 1)
    assert entry["text"] == "summarise the plan"
    assert entry["handle"]["channel_id"] == fake.channel_id  # the thread starter's own channel
    assert "raw" not in entry
    flat = json.dumps(entry)
    assert '"author"' not in flat and '"mentions"' not in flat and "discriminator" not in flat


async def test_a_slash_command_keeps_its_interaction_token_once_for_the_answer(
    ingress: FakeDiscord, redis: Any, keys: Keys
) -> None:
    fake = ingress
    sent = await fake.slash("usage")
    (entry,) = await _entries(redis, keys, 1)
    assert entry["native"]["token"] == sent["token"]
    assert json.dumps(entry).count(sent["token"]) == 1
    assert entry["handle"]["permissions"] == "0" and "raw" not in entry
