"""Discord 👍/👎 reactions as votes end to end: fake Discord ⇄ real discord.py ⇄ DiscordAdapter ⇄
the real manager (real Redis, demo model). With feedback on, a person's 👍 or 👎 reaction on an
answer is their vote on its run, the same one vote per person per answer a press on its buttons
casts (a later one replaces it); taking it off withdraws it unless the other is still on. With
feedback off the bot never asks Discord for reactions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import discord
import pytest
import redis.asyncio as aioredis

from channels.discord import DiscordAdapter
from channels.message import InboundMessage
from storage import FeedbackStore, Keys
from tests.fakes.discord_server import FakeDiscord
from tests.integration.channels.discord.test_e2e import Stack
from tests.integration.channels.metrics_probe import scrape
from tests.support import wait_until

Start = Callable[..., Awaitable[Stack]]

UP = 'switchboard_feedback_total{platform="discord",value="up"}'
REACTIONS = discord.Intents(guild_reactions=True, dm_reactions=True).value


@pytest.fixture
async def start(make_manager: Any) -> AsyncIterator[Start]:
    """A stack whose adapter is built as the service builds it: votes on when feedback is."""
    stacks: list[Stack] = []

    async def factory(**overrides: Any) -> Stack:
        fake = await FakeDiscord().start()
        manager = await make_manager(**overrides)
        seen: list[InboundMessage] = []

        async def deliver(msg: InboundMessage) -> None:
            await manager.deliver(msg)
            seen.append(msg)

        adapter = DiscordAdapter(
            token=fake.token,
            deliver=deliver,
            api_base=fake.api_base,
            guild_ready_timeout=0.05,
            votes=overrides.get("feedback", "on") == "on",
        )
        manager.register(adapter)
        await adapter.start()
        stacks.append(Stack(fake, manager, adapter, seen))
        return stacks[-1]

    try:
        yield factory
    finally:
        for stack in stacks:
            await stack.adapter.stop()
            await stack.fake.close()


async def _answer(stack: Stack) -> tuple[dict[str, Any], str]:
    """Alice's question answered in its thread: (the answer, the run its buttons name)."""
    sent = await stack.mention("hello there")
    await stack.settle(1)
    [answer] = stack.fake.bot_messages(sent["id"])
    custom_id = answer["components"][0]["components"][0]["custom_id"]
    return answer, custom_id.split(":", 2)[2]


async def _votes(redis: aioredis.Redis, keys: Keys) -> list[tuple[str, str, str, str]]:
    return sorted(
        (v.user_id, str(v.value), v.run_id, v.message_id)
        for v in await FeedbackStore(redis, keys=keys).recent()
    )


async def test_a_thumbs_up_reaction_on_our_answer_is_an_up_vote_for_its_run(
    start: Start, redis: aioredis.Redis, keys: Keys
) -> None:
    stack = await start()
    fake = stack.fake
    assert fake.identified_intents[-1] & REACTIONS == REACTIONS
    answer, run = await _answer(stack)
    before = await scrape(redis, keys, UP)

    await fake.react(answer, "👍")
    await fake.react(answer, "👍🏿", user=fake.bob)  # a skin tone is still a 👍
    await stack.settle(3)

    assert await _votes(redis, keys) == sorted(
        [(fake.alice["id"], "up", run, answer["id"]), (fake.bob["id"], "up", run, answer["id"])]
    )
    assert {v.thread_id for v in await FeedbackStore(redis, keys=keys).recent()} != {""}
    assert await scrape(redis, keys, UP) == before + 2
    assert len(fake.bot_messages(answer["channel_id"])) == 1  # a vote is never answered

    dm = await fake.user_message("hi", dm=True, author=fake.carol)
    await stack.settle(4)
    [in_dm] = fake.bot_messages(dm["channel_id"])
    await fake.react(in_dm, "👎", user=fake.carol)  # in a DM: no member, no guild
    await stack.settle(5)
    assert (fake.carol["id"], "down") in [(v[0], v[1]) for v in await _votes(redis, keys)]


async def test_a_later_reaction_by_the_same_person_replaces_their_vote_even_a_pressed_one(
    start: Start, redis: aioredis.Redis, keys: Keys
) -> None:
    stack = await start()
    fake = stack.fake
    answer, run = await _answer(stack)

    await fake.react(answer, "👍")
    await fake.react(answer, "👎")
    await stack.settle(3)
    assert await _votes(redis, keys) == [(fake.alice["id"], "down", run, answer["id"])]

    fake.delay_next("GET", rf"/channels/\d+/messages/{answer['id']}/reactions/.+", 0.5)
    await fake.unreact(answer, "👎")  # her 👍 is still on (read slowly): up
    await fake.react(answer, "👎")  # at once, and known without a read: down, in that order
    await stack.settle(5)
    assert await _votes(redis, keys) == [(fake.alice["id"], "down", run, answer["id"])]

    await fake.press(answer, f"fb:up:{run}")  # the button's vote and the reaction's are one
    await fake.react(answer, "👎", user=fake.bob)
    await stack.settle(7)
    assert await _votes(redis, keys) == sorted(
        [(fake.alice["id"], "up", run, answer["id"]), (fake.bob["id"], "down", run, answer["id"])]
    )


async def test_taking_a_reaction_off_leaves_the_other_standing_or_withdraws_the_vote(
    start: Start, redis: aioredis.Redis, keys: Keys
) -> None:
    stack = await start()
    fake = stack.fake
    answer, run = await _answer(stack)

    await fake.react(answer, "👎🏽")
    await fake.react(answer, "👍🏽")
    await stack.settle(3)
    assert await _votes(redis, keys) == [(fake.alice["id"], "up", run, answer["id"])]

    await fake.unreact(answer, "👍🏽")  # her 👎🏽 is still on the answer
    await stack.settle(4)
    assert await _votes(redis, keys) == [(fake.alice["id"], "down", run, answer["id"])]

    await fake.unreact(answer, "👎🏽")  # nothing left on it: no vote
    await stack.settle(5)
    assert await _votes(redis, keys) == []


async def test_reactions_on_others_messages_by_bots_or_with_other_emoji_record_nothing(
    start: Start, redis: aioredis.Redis, keys: Keys
) -> None:
    stack = await start()
    fake = stack.fake
    answer, run = await _answer(stack)
    question = await fake.user_message("a plain message")
    chooser = await stack.mention("choose")
    await stack.settle(2)
    [options] = fake.bot_messages(chooser["id"])  # ours, but not an answer to rate

    await fake.react(question, "👍")
    await fake.react(options, "👍")
    await fake.react(answer, "👍", user=fake.other_bot)
    await fake.react(answer, "👍", user=fake.bot)
    await fake.react(answer, "🎉")
    await fake.react(answer, "👍", emoji_id=str(fake.guild_id))  # a custom emoji named so
    await fake.react(answer, "👍", user=fake.carol, burst=True)  # a super reaction
    await fake.react(answer, "👎", user=fake.bob)  # the one that counts
    await stack.settle(3)

    assert [m.sender_id for m in stack.seen[2:]] == [fake.bob["id"]]
    assert await _votes(redis, keys) == [(fake.bob["id"], "down", run, answer["id"])]
    reads = fake.calls_to("GET", rf"/channels/\d+/messages/({question['id']}|{options['id']})")
    assert [c.path.rsplit("/", 1)[1] for c in reads] == [options["id"]]  # an add names the author


async def test_with_feedback_off_no_reactions_are_asked_for_or_counted(
    start: Start, redis: aioredis.Redis, keys: Keys
) -> None:
    stack = await start(feedback="off")
    fake = stack.fake
    assert fake.identified_intents and fake.identified_intents[-1] & REACTIONS == 0
    sent = await stack.mention("hello there")
    await stack.settle(1)
    [answer] = fake.bot_messages(sent["id"])

    await fake.react(answer, "👍")
    marker = await fake.user_message("hi", dm=True)
    await stack.settle(2)
    await wait_until(lambda: stack.seen[-1].provider_message_id == marker["id"])

    assert [m.provider_message_id for m in stack.seen] == [sent["id"], marker["id"]]
    assert await _votes(redis, keys) == []
    assert not fake.calls_to("GET", rf"/channels/\d+/messages/{answer['id']}(/.*)?")
