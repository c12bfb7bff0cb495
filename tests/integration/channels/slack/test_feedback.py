"""Slack feedback buttons end to end: fake Slack ⇄ real slack-bolt ⇄ SlackAdapter ⇄ the real
manager (real Redis, demo model). An answer carries Slack's feedback buttons; a press is stored
once per user and answer (a second press of the same button changes nothing, the other one
changes the vote) and counted in `/metrics`."""

from __future__ import annotations

import redis.asyncio as aioredis

from storage import FeedbackStore, Keys
from tests.integration.channels.metrics_probe import scrape
from tests.integration.channels.slack.test_e2e import StackFactory, dm, make_stack, new_ts
from tests.support import wait_until

__all__ = ["make_stack"]

DOWN = 'switchboard_feedback_total{platform="slack",value="down"}'
UP = 'switchboard_feedback_total{platform="slack",value="up"}'


def _feedback_element(blocks: list[dict]) -> dict:
    (actions,) = [b for b in blocks if b["type"] == "context_actions"]
    (element,) = actions["elements"]
    assert element["type"] == "feedback_buttons"
    return element


async def test_a_feedback_click_is_stored_once_and_counted_in_metrics(
    make_stack: StackFactory, redis: aioredis.Redis, keys: Keys
) -> None:
    s = await make_stack()
    await s.say(dm("hello", ts=new_ts()))
    await s.settle(1)
    (reply,) = s.replies("D1")
    answer_ts = s.fake.calls_to("chat.postMessage")[-1].response["ts"]
    element = _feedback_element(s.fake.messages[("D1", answer_ts)]["blocks"])
    negative = element["negative_button"]["value"]
    votes = FeedbackStore(redis, keys=keys)
    down_before, up_before = await scrape(redis, keys, DOWN), await scrape(redis, keys, UP)

    for _ in range(2):  # the same button twice: one vote
        press = s.fake.feedback_action(
            user_id="U1", channel="D1", message_ts=answer_ts, value=negative
        )
        await s.fake.wait_ack(await s.fake.push_action(press))
    await wait_until(lambda: len(s.seen) >= 3)
    await s.manager.idle()
    (vote,) = await votes.recent()
    assert (vote.platform, vote.user_id, str(vote.value)) == ("slack", "U1", "down")
    assert vote.run_id and vote.run_id in negative and vote.message_id == answer_ts
    assert vote.thread_id  # the DM's conversation
    assert await scrape(redis, keys, DOWN) == down_before + 1

    positive = element["positive_button"]["value"]
    press = s.fake.feedback_action(user_id="U1", channel="D1", message_ts=answer_ts, value=positive)
    await s.fake.wait_ack(await s.fake.push_action(press))
    await wait_until(lambda: len(s.seen) >= 4)
    await s.manager.idle()
    assert [str(v.value) for v in await votes.recent()] == ["up"]
    assert await scrape(redis, keys, UP) == up_before + 1
    assert len(s.replies("D1")) == 1  # a vote is never answered in the chat
    assert reply.params["text"]
