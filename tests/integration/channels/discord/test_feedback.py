"""Discord feedback buttons end to end: fake Discord ⇄ real discord.py ⇄ DiscordAdapter ⇄ the
real manager (real Redis, demo model). An answer carries 👍/👎; a press is deferred at once
(Discord allows 3 s) and stored as the presser's vote, one per user per answer."""

from __future__ import annotations

import redis.asyncio as aioredis

from storage import FeedbackStore, Keys
from tests.integration.channels.discord.test_e2e import Stack, stack
from tests.integration.channels.metrics_probe import scrape

__all__ = ["stack"]

UP = 'switchboard_feedback_total{platform="discord",value="up"}'


async def test_a_thumbs_up_press_is_deferred_stored_per_presser_and_counted(
    stack: Stack, redis: aioredis.Redis, keys: Keys
) -> None:
    fake = stack.fake
    sent = await stack.mention("hello there")
    await stack.settle(1)
    [answer] = fake.bot_messages(sent["id"])
    buttons = answer["components"][0]["components"]
    assert [b["emoji"]["name"] for b in buttons] == ["👍", "👎"]
    before = await scrape(redis, keys, UP)

    await fake.press(answer, buttons[0]["custom_id"])
    await fake.press(answer, buttons[0]["custom_id"], user=fake.bob)
    await fake.press(answer, buttons[0]["custom_id"])  # alice again: the same vote
    await stack.settle(4)

    votes = await FeedbackStore(redis, keys=keys).recent()
    assert sorted((v.user_id, str(v.value)) for v in votes) == sorted(
        [(fake.alice["id"], "up"), (fake.bob["id"], "up")]
    )
    assert {v.thread_id for v in votes} != {""} and {v.message_id for v in votes} == {answer["id"]}
    assert await scrape(redis, keys, UP) == before + 2
    callbacks = fake.calls_to("POST", r"/interactions/\d+/[^/]+/callback")
    assert len(callbacks) == 3 and {c.json["type"] for c in callbacks} == {6}  # deferred updates
    assert len(fake.bot_messages(sent["id"])) == 1  # a vote is never answered in the chat
