"""SWITCHBOARD_QUEUE_MAX_AGE_S through the real manager: real Redis, the demo model, a recording
adapter. A message older than the bound when its turn would start is told so and never reaches
the model; a fresh one is answered as always."""

from __future__ import annotations

import itertools
import time

from channels.adapter import AckKind
from channels.message import InboundMessage, Platform
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until

TOO_OLD = (
    "This message came in too long ago for me to answer it now; "
    "please send it again if it still matters."
)
_ids = itertools.count(1)


def dm(text: str, *, sent_at: float = 0.0, mid: str | None = None) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="D1",
        sender_id="U1",
        sender_name="alice",
        text=text,
        provider_message_id=mid or f"age{next(_ids)}",
        is_dm=True,
        sent_at=sent_at,
    )


async def setup(make_manager, **overrides):  # type: ignore[no-untyped-def]
    manager = await make_manager(**overrides)
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    return manager, adapter


async def test_a_message_sent_longer_ago_than_the_max_age_is_refused_without_the_model(
    make_manager,
) -> None:
    manager, adapter = await setup(make_manager)  # the default bound: an hour
    old = dm("remember the old words", sent_at=time.time() - 2 * 3600)
    await manager.deliver(old)
    await manager.idle()
    assert adapter.texts() == [TOO_OLD]
    assert adapter.sent[0].target.reply_to_id == old.provider_message_id  # says which one
    await manager.deliver(old)  # a redelivery: already answered, said once
    await manager.idle()
    assert adapter.texts() == [TOO_OLD]
    await manager.deliver(dm("recall", sent_at=time.time()))
    await manager.idle()
    # the model's thread begins with the fresh message: the old one never reached it
    assert adapter.texts() == [TOO_OLD, "You first said: recall"]


async def test_a_message_that_waited_in_the_queue_past_the_max_age_is_refused_when_its_turn_comes(
    make_manager,
) -> None:
    manager, adapter = await setup(make_manager, busy="queue", queue_max_age_s=1)
    await manager.deliver(dm("slow 2"))  # fresh: no platform time, its inbox arrival counts
    await wait_until(lambda: adapter.typing_count == 1)
    waiting = dm("echo late")
    await manager.deliver(waiting)
    await wait_until(lambda: (waiting.provider_message_id, AckKind.QUEUED) in adapter.acks)
    await manager.idle()
    assert adapter.texts() == ["Done after 2 s.", TOO_OLD]
    assert adapter.sent[1].target.reply_to_id == waiting.provider_message_id


async def test_a_max_age_of_zero_answers_a_day_old_message(make_manager) -> None:
    manager, adapter = await setup(make_manager, queue_max_age_s=0)
    await manager.deliver(dm("echo still here", sent_at=time.time() - 86_400))
    await manager.idle()
    assert adapter.texts() == ["still here"]
