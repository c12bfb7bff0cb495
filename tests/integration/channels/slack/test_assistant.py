"""Slack's AI-app surfaces end to end: fake Slack ⇄ real slack-bolt ⇄ SlackAdapter ⇄ the real
manager (real Redis, demo model). Opening the app's pane offers the suggested prompts; in an
assistant thread a turn shows "is thinking…" (instead of 👀), then "Using <tool>…", Slack clears
it with the reply, and the thread is titled once, from its first message."""

from __future__ import annotations

import redis.asyncio as aioredis

from storage import Keys, UsageLedger
from tests.integration.channels.slack.test_e2e import StackFactory, dm, make_stack, new_ts
from tests.support import wait_until

__all__ = ["make_stack"]


async def test_opening_an_assistant_thread_offers_the_suggested_prompts(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    opened = s.fake.open_assistant_thread("U1")
    await s.say(opened)
    await wait_until(lambda: bool(s.fake.calls_to("assistant.threads.setSuggestedPrompts")))
    (call,) = s.fake.calls_to("assistant.threads.setSuggestedPrompts")
    assert call.params["thread_ts"] == opened["assistant_thread"]["thread_ts"]
    assert call.params["title"] == "Hi! How can I help?"
    assert len(call.params["prompts"]) == 4
    assert all(p["title"] and p["message"] for p in call.params["prompts"])


async def test_the_agent_view_offers_the_prompts_when_its_messages_tab_opens(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    await s.say({"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "messages"})
    await wait_until(lambda: bool(s.fake.calls_to("assistant.threads.setSuggestedPrompts")))
    (call,) = s.fake.calls_to("assistant.threads.setSuggestedPrompts")
    assert call.params["channel_id"] == "D1" and "thread_ts" not in call.params


async def test_a_turn_with_a_tool_shows_its_status_until_the_reply_and_titles_the_thread_once(
    make_stack: StackFactory,
) -> None:
    s = await make_stack(streaming="on")
    opened = s.fake.open_assistant_thread("U1")
    await s.say(opened)
    root = opened["assistant_thread"]["thread_ts"]
    first = dm("what time is it", ts=new_ts())
    first["thread_ts"] = root
    await s.say(first)
    await s.settle(1)
    assert [h[2] for h in s.fake.status_history] == ["is thinking…", "Using current_time…"]
    assert s.fake.statuses == {}  # the reply cleared it
    assert s.fake.calls_to("reactions.add") == []  # the status replaced 👀
    reply = s.fake.calls_to("chat.postMessage")[-1]
    assert reply.params["thread_ts"] == root and reply.params["text"].startswith("It is ")

    second = dm("echo and again", ts=new_ts())
    second["thread_ts"] = root
    await s.say(second)
    await s.settle(2)
    assert s.fake.titles == {("D1", root): "what time is it"}
    assert len(s.fake.calls_to("assistant.threads.setTitle")) == 1


async def test_outside_assistant_threads_the_eyes_reaction_stays(make_stack: StackFactory) -> None:
    s = await make_stack()
    message = dm("echo hi", ts=new_ts())
    message["thread_ts"] = new_ts()  # a DM thread the user started: not the app's pane
    await s.say(message)
    await s.settle(1)
    assert [c.params["name"] for c in s.fake.calls_to("reactions.add")] == ["eyes"]
    assert s.fake.status_history == [] and s.fake.titles == {}

    opened = s.fake.open_assistant_thread("U1")  # the same DM: its assistant threads still work
    await s.say(opened)
    inside = dm("echo there", ts=new_ts())
    inside["thread_ts"] = opened["assistant_thread"]["thread_ts"]
    await s.say(inside)
    await s.settle(2)
    assert [h[2] for h in s.fake.status_history] == ["is thinking…"]
    assert len(s.fake.calls_to("reactions.add")) == 1


async def test_the_home_tab_shows_the_users_link_state_usage_and_the_commands(
    make_stack: StackFactory, redis: aioredis.Redis, keys: Keys
) -> None:
    s = await make_stack(budget_daily_usd=2.0, access="linked")
    await UsageLedger(redis, keys=keys).record("slack", "U1", "run-1", 500_000)  # $0.50 of $2
    await s.say({"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "home"})
    await wait_until(lambda: "U1" in s.fake.homes)
    view = s.fake.homes["U1"]
    text = "\n".join(
        str(b.get("text", {}).get("text", "")) for b in view["blocks"] if b.get("text")
    )
    assert "25.0% of your daily limit used" in text
    assert "Not linked yet" in text and "/switchboard link" in text
    assert "/switchboard stop" in text and "/switchboard usage" in text
    assert s.fake.calls_to("chat.postMessage") == []  # the home is not a message
