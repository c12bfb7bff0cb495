"""Busy modes end to end: the production manager on real Redis, the real OpenAI client against the
fake model server (so what the model receives is asserted on the wire), a recording adapter."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from channels.adapter import AckKind
from channels.message import InboundMessage, Platform
from storage import Keys, ThreadMap, ThreadQueue
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until

_ids = itertools.count(1)


def dm(text: str, *, chat: str = "D1") -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=chat,
        sender_id="U1",
        sender_name="alice",
        text=text,
        provider_message_id=f"busy{next(_ids)}",
        is_dm=True,
    )


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    server = FakeOpenAI()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def _setup(make_manager, model: FakeOpenAI, **overrides):  # type: ignore[no-untyped-def]
    manager = await make_manager(
        model="openai:gpt-4o-mini",
        openai_base_url=model.base_url,
        openai_api_key=API_KEY,
        streaming="off",
        rate_limit_per_minute=1000,
        **overrides,
    )
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    return manager, adapter


def _users(model: FakeOpenAI, n: int) -> list[str]:
    """The user messages of the model's n-th request."""
    return [str(m.get("content")) for m in model.requests[n].messages if m.get("role") == "user"]


async def test_steer_hands_a_message_sent_during_a_tool_step_to_the_next_model_call(
    make_manager, model: FakeOpenAI, redis, keys: Keys
) -> None:
    model.delay = 1.0  # the first model call (which asks for a tool) takes a while
    manager, adapter = await _setup(make_manager, model)
    first, correction = dm("what time is it"), dm("actually, for Berlin")
    await manager.deliver(first)
    await wait_until(lambda: len(model.requests) == 1)
    await manager.deliver(correction)
    await manager.idle()

    assert len(model.requests) == 2  # one run: the correction did not get a turn of its own
    assert _users(model, 1) == ["what time is it", "actually, for Berlin"]
    assert adapter.texts() == ["You said: actually, for Berlin"]
    assert (correction.provider_message_id, AckKind.STEERED) in adapter.acks
    thread_id = await ThreadMap(redis, keys=keys).resolve("slack:T1:D1")
    queue = ThreadQueue(redis, keys=keys)
    assert (await queue.state(thread_id)).unanswered == 0
    # answered by that one reply: a redelivery of the correction is not answered again
    await manager.deliver(correction)
    await manager.idle()
    assert len(model.requests) == 2 and len(adapter.texts()) == 1


async def test_steer_leaves_a_message_for_the_next_turn_when_no_model_call_is_left(
    make_manager, model: FakeOpenAI
) -> None:
    model.delay = 1.0  # one model call, no tool: nothing more to hand a message to
    manager, adapter = await _setup(make_manager, model)
    await manager.deliver(dm("first question"))
    await wait_until(lambda: len(model.requests) == 1)
    await manager.deliver(dm("second question"))
    await manager.idle()
    assert adapter.texts() == ["You said: first question", "You said: second question"]
    assert len(model.requests) == 2


async def test_collect_makes_a_burst_one_model_request(make_manager, model: FakeOpenAI) -> None:
    manager, adapter = await _setup(make_manager, model, busy="collect", collect_ms=1500)
    for text in ("my flight is at 9", "from Paris", "to Berlin"):
        await manager.deliver(dm(text))
        await asyncio.sleep(0.2)
    await manager.idle()
    assert len(model.requests) == 1
    assert _users(model, 0) == ["my flight is at 9\n\nfrom Paris\n\nto Berlin"]
    assert adapter.texts() == ["You said: my flight is at 9\n\nfrom Paris\n\nto Berlin"]


async def test_collect_counts_the_window_from_arrival_and_waits_for_a_burst_held_up_by_load(
    make_manager, model: FakeOpenAI
) -> None:
    """Two turn slots, one taken by another chat's turn: the burst's later messages wait unread
    in the inbox until it ends, about 2 s after the first arrived. Counted from the first
    message's turn, the 1.5 s window closed on it alone; counted from arrival and held open
    while the burst's messages are still on their way, it takes all three."""
    model.delay = 0.6
    manager, adapter = await _setup(
        make_manager, model, busy="collect", collect_ms=1500, max_concurrent_turns=2
    )
    await manager.deliver(dm("someone else", chat="D2"))
    await asyncio.sleep(0.1)
    for text in ("my flight is at 9", "from Paris", "to Berlin"):
        await manager.deliver(dm(text))
        await asyncio.sleep(0.25)
    await manager.idle()
    burst = [r for r in model.requests if "someone else" not in str(r.messages)]
    assert len(burst) == 1
    assert adapter.texts()[-1] == "You said: my flight is at 9\n\nfrom Paris\n\nto Berlin"


async def test_interrupt_abandons_the_running_request_and_answers_both_messages(
    make_manager, model: FakeOpenAI
) -> None:
    model.delay = 2.0
    manager, adapter = await _setup(make_manager, model, busy="interrupt")
    await manager.deliver(dm("tell me about Paris"))
    await wait_until(lambda: len(model.requests) == 1)
    await manager.deliver(dm("no, about Berlin"))
    await manager.idle()
    assert len(model.requests) == 2
    # the interrupted message stays in the history; the new request carries both, once each
    assert _users(model, 1) == ["tell me about Paris", "no, about Berlin"]
    assert adapter.texts() == ["You said: no, about Berlin"]
    model.delay = 0.0
    await manager.deliver(dm("and now?"))
    await manager.idle()
    assert _users(model, 2) == ["tell me about Paris", "no, about Berlin", "and now?"]


async def test_queue_reject_in_one_conversation_leaves_another_on_the_default(
    make_manager,
) -> None:
    manager = await make_manager(rate_limit_per_minute=1000)  # the demo model: `slow S`
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    await manager.deliver(dm("/queue reject", chat="DA"))
    await manager.idle()
    assert adapter.texts()[-1].startswith("Busy mode: reject (set here)")

    for chat in ("DA", "DB"):
        await manager.deliver(dm("slow 1", chat=chat))
    await wait_until(lambda: adapter.typing_count == 2)
    late_a, late_b = dm("echo late in A", chat="DA"), dm("echo late in B", chat="DB")
    await manager.deliver(late_a)
    await manager.deliver(late_b)
    await manager.idle()

    by_chat = {c: [s.text for s in adapter.sent if s.target.chat_id == c] for c in ("DA", "DB")}
    assert by_chat["DA"][1:] == [
        "Done after 1 s.",
        "I'm still working on the previous message here; please resend in a moment.",
    ] or by_chat["DA"][1:] == [
        "I'm still working on the previous message here; please resend in a moment.",
        "Done after 1 s.",
    ]
    assert by_chat["DB"] == ["Done after 1 s.", "late in B"]
    assert (late_b.provider_message_id, AckKind.QUEUED) in adapter.acks

    await manager.deliver(dm("/status", chat="DB"))
    await manager.deliver(dm("/queue default", chat="DA"))
    await manager.idle()
    status = [s.text for s in adapter.sent if s.target.chat_id == "DB"][-1]
    assert "Busy mode: steer (the default)" in status
    reset = [s.text for s in adapter.sent if s.target.chat_id == "DA"][-1]
    assert reset.startswith("Busy mode: steer (the default)")


async def test_a_graph_that_cannot_steer_queues_and_says_so(make_manager) -> None:
    manager = await make_manager(agent="python:examples.echo_graph:graph")
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    await manager.deliver(dm("/queue"))
    await manager.idle()
    assert "steer works as queue here" in adapter.texts()[-1]
