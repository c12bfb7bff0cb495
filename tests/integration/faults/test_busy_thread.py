"""Fifteen messages to a thread that is busy answering: each one is either answered, in arrival
order, or refused with a notice right away; none is promised (⏳) and then dropped."""

from __future__ import annotations

import re

from channels.adapter import AckKind
from channels.message import InboundMessage, Platform
from storage import QUEUE_CAP
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until


def dm(text: str, n: int) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="D1",
        sender_id="U1",
        sender_name="alice",
        text=text,
        provider_message_id=f"busy-{n}",
        is_dm=True,
    )


async def test_fifteen_messages_to_a_busy_thread_are_answered_in_order_or_refused(
    make_manager,  # type: ignore[no-untyped-def]
) -> None:
    manager = await make_manager(rate_limit_per_minute=1000)
    adapter = RecordingAdapter()
    manager.register(adapter)
    await manager.deliver(dm("slow 1", 0))
    await wait_until(lambda: adapter.typing_count == 1)
    for n in range(1, 16):
        await manager.deliver(dm(f"echo m{n}x", n))
    await manager.idle(timeout=60)

    refusals = [s for s in adapter.sent if "can't take this one" in s.text]
    promised = {mid for mid, kind in adapter.acks if kind is AckKind.QUEUED}
    answers = " ".join(t for t in adapter.texts() if "can't take this one" not in t)
    answered = [int(n) for n in re.findall(r"\bm(\d+)x\b", answers)]
    assert next(t for t in adapter.texts() if "can't take" not in t) == "Done after 1 s."
    assert answered == sorted(answered)  # arrival order kept
    assert len(answered) == len(set(answered))  # each once
    assert len(answered) == QUEUE_CAP - 1  # the slow turn holds one of the places
    assert {f"busy-{n}" for n in answered} == promised  # every promise kept
    assert len(refusals) == 15 - len(promised)  # the rest were told at once, each as a reply
    refused = {s.target.reply_to_id for s in refusals}
    assert len(refused) == len(refusals) and not refused & promised


async def test_messages_sent_together_are_answered_in_the_order_they_were_sent(
    make_manager,  # type: ignore[no-untyped-def]
) -> None:
    manager = await make_manager(rate_limit_per_minute=1000)
    adapter = RecordingAdapter()
    manager.register(adapter)
    for n in range(1, QUEUE_CAP):  # all fit in the thread's queue at once
        await manager.deliver(dm(f"echo o{n}x", 100 + n))
    await manager.idle(timeout=60)
    answered = [int(n) for n in re.findall(r"\bo(\d+)x\b", " ".join(adapter.texts()))]
    assert answered == list(range(1, QUEUE_CAP)), adapter.texts()
