"""Discord end to end: fake Discord (REST + gateway) ⇄ real discord.py ⇄ DiscordAdapter ⇄ the real
manager (real Redis, demo model). Tests dispatch gateway events and read the REST calls out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from channels.discord import DiscordAdapter
from channels.manager import Manager
from channels.message import InboundMessage
from tests.fakes.discord_server import FakeDiscord
from tests.support import wait_until


@dataclass
class Stack:
    fake: FakeDiscord
    manager: Manager
    adapter: DiscordAdapter
    seen: list[InboundMessage] = field(default_factory=list)

    async def settle(self, delivered: int) -> None:
        """Wait until `delivered` messages reached the manager, then until it is idle."""
        await wait_until(lambda: len(self.seen) >= delivered)
        await self.manager.idle()

    async def mention(self, text: str, **kw: Any) -> dict[str, Any]:
        return await self.fake.user_message(f"<@{self.fake.bot['id']}> {text}", **kw)

    def replies(self, channel_id: str) -> list[str]:
        return [m["content"] for m in self.fake.bot_messages(channel_id)]


@pytest.fixture
async def stack(make_manager) -> AsyncIterator[Stack]:  # type: ignore[no-untyped-def]
    fake = await FakeDiscord().start()
    manager = await make_manager()
    seen: list[InboundMessage] = []

    async def deliver(msg: InboundMessage) -> None:
        await manager.deliver(msg)
        seen.append(msg)  # counted once durable: settle() then waits for it

    adapter = DiscordAdapter(
        token=fake.token, deliver=deliver, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    manager.register(adapter)
    await adapter.start()
    try:
        yield Stack(fake, manager, adapter, seen)
    finally:
        await adapter.stop()
        await fake.close()


async def test_dm_gets_a_reply_in_the_dm(stack: Stack) -> None:
    sent = await stack.fake.user_message("hi", dm=True)
    await stack.settle(1)
    [reply] = stack.replies(sent["channel_id"])
    assert reply.startswith("Hello!")


async def test_mention_creates_a_thread_and_the_reply_lands_in_it(stack: Stack) -> None:
    sent = await stack.mention("hello there")
    await stack.settle(1)
    assert stack.fake.threads[sent["id"]]["name"] == "hello there"
    assert stack.replies(sent["id"]) == ["You said: hello there"]
    assert stack.replies(stack.fake.channel_id) == []


async def test_follow_up_in_the_thread_needs_no_mention_and_continues_it(stack: Stack) -> None:
    sent = await stack.mention("remember pineapples")
    await stack.settle(1)
    await stack.fake.user_message("recall", channel_id=sent["id"])
    await stack.settle(2)
    assert stack.replies(sent["id"])[-1] == "You first said: remember pineapples"


async def test_channel_message_without_mention_gets_no_reply(stack: Stack) -> None:
    await stack.fake.user_message("hello everyone")
    await stack.fake.user_message(f"<@{stack.fake.bot['id']}> hi", author=stack.fake.other_bot)
    marker = await stack.fake.user_message("hi", dm=True)
    await stack.settle(1)
    assert [m.provider_message_id for m in stack.seen] == [marker["id"]]
    assert stack.replies(stack.fake.channel_id) == [] and not stack.fake.threads


async def test_thread_creation_failure_replies_in_the_channel(stack: Stack) -> None:
    stack.fake.thread_failure = (403, 50013, "Missing Permissions")
    sent = await stack.mention("help me")
    await stack.settle(1)
    [reply] = stack.fake.bot_messages(stack.fake.channel_id)
    assert reply["content"] == "You said: help me"
    assert str(reply["message_reference"]["message_id"]) == sent["id"]


async def test_long_code_answer_is_chunked_with_balanced_fences(stack: Stack) -> None:
    sent = await stack.mention("code 5000")
    await stack.settle(1)
    chunks = stack.replies(sent["id"])
    assert len(chunks) >= 3
    assert all(len(c) <= 2000 for c in chunks)
    assert all(c.count("```") % 2 == 0 for c in chunks)
    assert sum(len(c) for c in chunks) >= 5000


async def test_everyone_in_model_text_never_pings(stack: Stack) -> None:
    sent = await stack.mention("echo @everyone hi")
    await stack.settle(1)
    [reply] = stack.replies(sent["id"])
    assert reply.endswith("everyone hi")  # the renderer may also defuse it in the text
    posts = stack.fake.calls_to("POST", r"/channels/\d+/messages")
    assert posts and all(c.json["allowed_mentions"] == {"parse": []} for c in posts)


async def test_button_clarification_answers_only_for_the_asker(stack: Stack) -> None:
    fake = stack.fake
    sent = await stack.mention("choose")
    await stack.settle(1)
    [question] = fake.bot_messages(sent["id"])
    buttons = question["components"][0]["components"]
    assert [b["label"] for b in buttons] == ["alpha", "beta", "gamma"]

    await fake.press(question, buttons[0]["custom_id"], user=fake.bob)
    await stack.settle(2)
    assert [(f.user_id, f.ephemeral) for f in fake.followups] == [(fake.bob["id"], True)]
    assert "Only" in fake.followups[0].content
    assert question["components"]  # still open

    await fake.press(question, buttons[1]["custom_id"])
    await stack.settle(3)
    await wait_until(lambda: stack.replies(sent["id"])[-1] == "You chose: beta.")
    assert question["content"].endswith("✅ beta") and question["components"] == []
    assert len(fake.followups) == 1  # the asker got no notice


async def test_typed_answer_to_a_question_works_too(stack: Stack) -> None:
    sent = await stack.mention("choose")
    await stack.settle(1)
    await stack.fake.user_message("gamma", channel_id=sent["id"])
    await stack.settle(2)
    await wait_until(lambda: stack.replies(sent["id"])[-1] == "You chose: gamma.")


async def test_busy_thread_message_gets_a_reaction(stack: Stack) -> None:
    sent = await stack.mention("slow 0.5")
    await wait_until(lambda: stack.fake.calls_to("POST", rf"/channels/{sent['id']}/typing"))
    queued = await stack.fake.user_message("and this", channel_id=sent["id"])
    await stack.settle(2)
    assert stack.fake.calls_to(
        "PUT", rf"/channels/{sent['id']}/messages/{queued['id']}/reactions/[^/]+/@me"
    )
    assert stack.replies(sent["id"])[-1].endswith("and this")  # answered in the next turn


async def test_duplicate_message_after_resume_gets_one_reply(stack: Stack) -> None:
    sent = await stack.mention("only once")
    await stack.settle(1)
    await stack.fake.reconnect(replay=[sent])
    await stack.settle(2)
    assert stack.replies(sent["id"]) == ["You said: only once"]
    assert len(stack.fake.calls_to("POST", r"/channels/\d+/messages/\d+/threads")) == 1
    assert stack.fake.resumes == 1 and stack.fake.identifies == 1
