"""Conversation context on Discord, end to end: people talk in the fake Discord (their messages
reach the gateway and are skipped as not for the bot), the real discord.py reads them back over
REST when the bot is mentioned, the real manager on real Redis builds the turn, and the fake
OpenAI server records what the model was sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from channels import metrics
from channels.discord import DiscordAdapter
from channels.manager import Manager
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.integration.channels.context_harness import context_lines, user_text
from tests.support import wait_until


@dataclass
class Stack:
    fake: FakeDiscord
    model: FakeOpenAI
    manager: Manager

    async def mention(self, text: str, **kw: Any) -> dict[str, Any]:
        return await self.fake.user_message(f"<@{self.fake.bot['id']}> {text}", **kw)

    async def answered(self, count: int) -> None:
        await wait_until(lambda: len(self.model.requests) >= count)
        await self.manager.idle()
        await wait_until(
            lambda: sum(len(self.fake.bot_messages(c)) for c in self.fake.channels) >= count
        )


@pytest.fixture
async def stack(make_manager: Any, openai_server: FakeOpenAI) -> AsyncIterator[Stack]:
    fake = await FakeDiscord().start()
    manager = await make_manager(
        model="openai:gpt-4o-mini",
        openai_base_url=openai_server.base_url,
        openai_api_key=API_KEY,
        streaming="off",
    )
    adapter = DiscordAdapter(
        token=fake.token, deliver=manager.deliver, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    manager.register(adapter)
    await adapter.start()
    try:
        yield Stack(fake, openai_server, manager)
    finally:
        await adapter.stop()
        await fake.close()


async def test_a_mention_in_a_channel_shows_the_discussion_before_it(stack: Stack) -> None:
    fake = stack.fake
    fake.nicks[fake.bob["id"]] = "Bobby Tables"
    await fake.user_message("The deploy failed at the migration step.")
    await fake.user_message(
        f"Again? <@{fake.alice['id']}> did you change the schema?", author=fake.bob
    )
    await stack.mention("what went wrong?", author=fake.carol)
    await stack.answered(1)

    assert context_lines(stack.model) == [
        "Alice: The deploy failed at the migration step.",
        "Bobby Tables: Again? @Alice did you change the schema?",
    ]
    assert user_text(stack.model) == "what went wrong?"


async def test_a_reply_chain_is_followed_up_from_the_replied_message(stack: Stack) -> None:
    fake = stack.fake
    first = await fake.user_message("Proposal: move standup to 10:00.")
    second = await fake.user_message(
        "Only if it stays short.", author=fake.bob, reply_to=first["id"]
    )
    for _ in range(3):  # the chain is older than the newest channel messages
        await fake.user_message("unrelated chatter", author=fake.carol)
    await stack.mention("thoughts?", reply_to=second["id"])
    await stack.answered(1)

    lines = context_lines(stack.model)
    assert lines[:2] == [
        "Alice (replied to): Proposal: move standup to 10:00.",
        "Bob (replied to): Only if it stays short.",
    ]
    assert lines[2:] == ["Carol: unrelated chatter"] * 3
    fetched = fake.calls_to("GET", rf"/channels/{fake.channel_id}/messages/{first['id']}")
    assert len(fetched) == 1  # the replied message came with the event; only its parent is read


async def test_a_mention_in_someone_elses_thread_shows_that_thread(stack: Stack) -> None:
    fake = stack.fake
    await fake.user_message("This stays outside the thread.")
    thread = await stack.fake.user_thread("Release plan")
    await fake.user_message("Freeze on Wednesday.", channel_id=thread)
    await fake.user_message("And ship Thursday.", channel_id=thread, author=fake.bob)
    await stack.mention("make a checklist", channel_id=thread)
    await stack.answered(1)

    assert context_lines(stack.model) == ["Alice: Freeze on Wednesday.", "Bob: And ship Thursday."]
    assert fake.bot_messages(thread)  # answered in the thread


async def test_catch_up_in_the_bots_thread_shows_what_others_posted_since(
    stack: Stack, redis: Any, prefix: str
) -> None:
    fake = stack.fake
    sent = await stack.mention("track the incident")
    await stack.answered(1)
    await fake.user_message("ALERT: error rate 12%", channel_id=sent["id"], author=fake.other_bot)
    await fake.user_message("ALERT: error rate 30%", channel_id=sent["id"], author=fake.other_bot)
    await redis.delete(*[k async for k in redis.scan_iter(match=f"{prefix}*ctx:cache")])
    await fake.user_message("how bad is it now?", channel_id=sent["id"])
    await stack.answered(2)

    assert context_lines(stack.model) == [
        "Otherbot: ALERT: error rate 12%",
        "Otherbot: ALERT: error rate 30%",
    ]


async def test_mentioned_again_within_the_cache_ttl_the_model_sees_what_others_posted_since(
    stack: Stack,
) -> None:
    fake = stack.fake
    sent = await stack.mention("track the incident")
    await stack.answered(1)
    await fake.user_message("ALERT: error rate 12%", channel_id=sent["id"], author=fake.other_bot)
    await fake.user_message("ALERT: error rate 30%", channel_id=sent["id"], author=fake.other_bot)
    await fake.user_message("how bad is it now?", channel_id=sent["id"])
    await stack.answered(2)

    assert context_lines(stack.model) == [
        "Otherbot: ALERT: error rate 12%",
        "Otherbot: ALERT: error rate 30%",
    ]


async def test_without_read_history_permission_the_turn_is_answered_without_context(
    stack: Stack,
) -> None:
    stack.fake.refuse_history = True
    before = metrics.CONTEXT_READS.labels(platform="discord", result="denied")._value.get()
    await stack.fake.user_message("Some earlier words.")
    await stack.mention("still there?")
    await stack.answered(1)

    assert context_lines(stack.model) == []
    assert user_text(stack.model) == "still there?"
    assert (
        metrics.CONTEXT_READS.labels(platform="discord", result="denied")._value.get() == before + 1
    )
