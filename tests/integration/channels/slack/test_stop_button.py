"""Slack's Stop button, and the fallback from a refused `chat.startStream`, end to end: fake
Slack ⇄ real slack-bolt ⇄ SlackAdapter ⇄ the real manager (real Redis, demo model, streaming
on). Where the streaming API is refused the reply is posted and edited, with a Stop button that
only the asker (or a workspace admin) can press; pressed, the run stops as `/stop` stops it."""

from __future__ import annotations

from typing import Any

from tests.integration.channels.slack.test_e2e import StackFactory, make_stack, mention, new_ts
from tests.support import wait_until

__all__ = ["make_stack"]


def _stop_button(message: dict[str, Any]) -> dict[str, Any] | None:
    for block in message.get("blocks") or ():
        for element in block.get("elements") or ():
            if element.get("action_id") == "stop":
                return element
    return None


def _press(s: Any, user: str, ts: str, thread_ts: str, value: str) -> dict[str, Any]:
    press = s.fake.block_action(
        user_id=user,
        channel="C1",
        message_ts=ts,
        action_id="stop",
        label="Stop",
        thread_ts=thread_ts,
    )
    press["actions"][0]["value"] = value
    return press


async def test_a_refused_stream_posts_its_text_at_once_and_only_the_asker_can_stop_it(
    make_stack: StackFactory,
) -> None:
    s = await make_stack(streaming="on")
    s.fake.refuse_streaming = "feature_not_enabled"
    root = new_ts()
    await s.say(mention("drip 100", ts=root))  # a word every 0.1 s: about ten seconds
    await wait_until(lambda: bool(s.fake.calls_to("chat.postMessage")))
    (refused,) = s.fake.calls_to("chat.startStream", ok_only=False)
    first = s.fake.calls_to("chat.postMessage")[0]
    # the text Slack refused to stream is what is posted, not a later state an interval on
    assert first.params["text"].split() == refused.params["markdown_text"].split()
    ts = first.response["ts"]
    button = _stop_button(s.fake.messages[("C1", ts)])
    assert button is not None and button["value"] == "stop:U1"

    await s.fake.wait_ack(await s.fake.push_action(_press(s, "U2", ts, root, button["value"])))
    (refusal,) = s.fake.calls_to("chat.postEphemeral")
    assert refusal.params["user"] == "U2" and "Only the person who asked" in refusal.params["text"]

    await s.fake.wait_ack(await s.fake.push_action(_press(s, "U1", ts, root, button["value"])))
    await wait_until(lambda: "(stopped)" in s.fake.messages[("C1", ts)]["text"])
    await s.manager.idle()
    kept = s.fake.messages[("C1", ts)]
    words = kept["text"].replace("_\\(stopped\\)_", "").replace("(stopped)", "").split()
    assert words[:3] == ["w1", "w2", "w3"] and "w100" not in kept["text"]
    assert _stop_button(kept) is None  # settled: the button is gone
    assert "Stopping the current answer." in s.fake.posted_texts()
