"""Slack agent sessions end to end (an app declared as an agent): fake Slack ⇄ real slack-bolt ⇄
SlackAdapter ⇄ the real manager (real Redis, demo model). A message starts its thread's session
as `processing`, titled from it, instead of the 👀 reaction; the reply sets it `active`; Slack's
own Stop (`agent_session_stopped`) stops the run as `/stop` does. An app that is not an agent is
refused once and keeps its 👀."""

from __future__ import annotations

import asyncio

from tests.integration.channels.slack.test_e2e import StackFactory, make_stack, mention, new_ts
from tests.support import wait_until

__all__ = ["make_stack"]


async def test_a_message_runs_its_thread_as_a_session_until_the_reply(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    s.fake.agent_app = True
    ts = new_ts()
    await s.say(mention("echo hello there", ts=ts))
    await s.settle(1)
    assert s.fake.session_history == [("C1", ts, "processing"), ("C1", ts, "active")]
    assert s.fake.sessions[("C1", ts)]["title"] == "echo hello there"
    assert s.fake.calls_to("reactions.add") == []  # the session's state replaced 👀


async def test_slacks_stop_on_a_session_stops_the_run_and_keeps_what_was_written(
    make_stack: StackFactory,
) -> None:
    s = await make_stack(streaming="on")
    s.fake.agent_app = True
    s.fake.refuse_streaming = "feature_not_enabled"  # posted and edited: the text is readable
    ts = new_ts()
    await s.say(mention("drip 100", ts=ts))  # about ten seconds
    await wait_until(
        lambda: any(len(t.split()) >= 3 for t in s.fake.texts_in("C1") if t.startswith("w1"))
    )
    await s.say(s.fake.session_stopped("U1", "C1", ts))
    await wait_until(lambda: any("(stopped)" in t for t in s.fake.texts_in("C1")))
    await s.manager.idle()
    (kept,) = [t for t in s.fake.texts_in("C1") if "(stopped)" in t]
    assert "w3" in kept and "w100" not in kept
    assert s.fake.sessions[("C1", ts)]["status"] == "active"


async def test_an_app_that_is_not_an_agent_keeps_its_eyes_reaction(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    for n in (1, 2):
        await s.say(mention("echo hi", ts=new_ts()))
        await s.settle(n)
    assert [c.params["name"] for c in s.fake.calls_to("reactions.add")] == ["eyes", "eyes"]
    assert len(s.fake.calls_to("agents.sessions.setStatus", ok_only=False)) == 1  # then remembered


async def test_a_rate_limited_session_call_falls_back_for_that_message_only(
    make_stack: StackFactory,
) -> None:
    s = await make_stack()
    s.fake.agent_app = True
    s.fake.fail_next("agents.sessions.setStatus", times=8)  # past slack-sdk's three 429 retries
    first = new_ts()
    await s.say(mention("echo one", ts=first))
    await s.settle(1)
    await wait_until(lambda: len(s.fake.calls_to("agents.sessions.setStatus", ok_only=False)) >= 4)
    await asyncio.sleep(0.2)  # slack-sdk's last retry is answered
    s.fake.forget_failures()
    assert ("C1", first, "processing") not in s.fake.session_history  # the fallback showed
    second = new_ts()
    await s.say(mention("echo two", ts=second))
    await s.settle(2)
    # a 429 is no refusal: the next message is a session again, not the fallback for the
    # process's life
    assert [h for h in s.fake.session_history if h[1] == second] == [
        ("C1", second, "processing"),
        ("C1", second, "active"),
    ]
