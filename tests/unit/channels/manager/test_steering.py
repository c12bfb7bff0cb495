"""Steering on the in-memory ports: what a running batch takes in, and what it leaves queued."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from agent.steer import SteerMiddleware, graph_steers
from channels.adapter import AckKind
from channels.manager.codec import encode_message
from channels.manager.replies.responder import Responder
from channels.manager.turns.batches import pick_batch
from channels.manager.turns.steering import Steering
from channels.message import ButtonPress, InboundMessage, Platform
from switchboard.state import sortable_entry_id
from tests.fakes.memory_ports import MemoryPorts
from tests.fakes.recording_adapter import RecordingAdapter

T = "t1"


def _msg(text: str, n: int, *, button: bool = False, dm: bool = True) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="W",
        chat_id="D1" if dm else "C1",
        sender_id=f"U{n}",
        sender_name=f"user{n}",
        text=text,
        provider_message_id=f"m{n}",
        is_dm=dm,
        button=ButtonPress("q1", 0) if button else None,
    )


async def _steering(ports: MemoryPorts, first: InboundMessage, *, max_chars: int = 1000):
    slot = await ports.queue.submit(T, "1-0", encode_message(first), "tok")
    assert slot.lock is not None
    batch = pick_batch(slot.items, None, max_chars=max_chars)
    adapter = RecordingAdapter()
    pending: list[asyncio.Future[None]] = []

    def background(coro: Coroutine[Any, Any, None]) -> None:
        pending.append(asyncio.ensure_future(coro))

    steering = Steering(
        queue=ports.queue,
        lock=slot.lock,
        batch=batch,
        adapter=adapter,
        responder=Responder(typing_delay_s=0.3),
        max_chars=max_chars,
        background=background,
    )
    return steering, batch, adapter, pending


async def test_the_first_model_call_takes_nothing_and_later_ones_take_what_queued_in_order() -> (
    None
):
    ports = MemoryPorts()
    steering, batch, adapter, pending = await _steering(ports, _msg("what time is it", 1))
    await ports.queue.submit(T, "2-0", encode_message(_msg("in Berlin", 2)), "tok2")
    assert await steering.take() == []  # the first call: the batch was read a moment ago
    await ports.queue.submit(T, "3-0", encode_message(_msg("and Paris", 3)), "tok3")
    assert await steering.take() == ["in Berlin", "and Paris"]
    assert await steering.take() == []  # taken once
    await asyncio.gather(*pending)
    assert adapter.acks == [("m2", AckKind.STEERED), ("m3", AckKind.STEERED)]
    grown = steering.grown(batch)
    assert grown.entry_ids == [sortable_entry_id(f"{n}-0") for n in (1, 2, 3)]
    assert [m.text for m in grown.messages] == ["what time is it", "in Berlin", "and Paris"]
    assert (await ports.queue.state(T)).unanswered == 3  # answered only with the batch


async def test_a_button_press_or_a_message_over_the_size_limit_waits_for_the_next_turn() -> None:
    ports = MemoryPorts()
    steering, batch, _, _ = await _steering(ports, _msg("x" * 10, 1), max_chars=40)
    await steering.take()
    await ports.queue.submit(T, "2-0", encode_message(_msg("y" * 10, 2)), "tok2")
    await ports.queue.submit(T, "3-0", encode_message(_msg("z" * 30, 3)), "tok3")
    await ports.queue.submit(T, "4-0", encode_message(_msg("w", 4)), "tok4")
    assert await steering.take() == ["y" * 10]  # z would not fit: it and what follows wait
    assert await steering.take() == []
    assert steering.grown(batch).entry_ids == [sortable_entry_id("1-0"), sortable_entry_id("2-0")]

    ports = MemoryPorts()
    steering, batch, _, _ = await _steering(ports, _msg("hi", 1))
    await steering.take()
    await ports.queue.submit(T, "2-0", encode_message(_msg("1", 2, button=True)), "tok2")
    assert await steering.take() == []
    assert steering.grown(batch) == batch


async def test_in_a_group_steered_messages_carry_their_senders_name() -> None:
    ports = MemoryPorts()
    steering, _, _, _ = await _steering(ports, _msg("plan the trip", 1, dm=False))
    await steering.take()
    await ports.queue.submit(T, "2-0", encode_message(_msg("by train", 2, dm=False)), "tok2")
    assert await steering.take() == ["user2: by train"]


async def test_a_lost_lock_takes_nothing() -> None:
    ports = MemoryPorts(lock_ttl_s=1.0)
    steering, _, _, _ = await _steering(ports, _msg("hi", 1))
    await steering.take()
    await ports.queue.submit(T, "2-0", encode_message(_msg("more", 2)), "tok2")
    ports.clock.advance(2.0)
    assert await steering.take() == []


def test_a_create_agent_graph_steers_with_the_middleware_and_not_without() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage(content="ok")]))
    assert graph_steers(create_agent(model, tools=[], middleware=[SteerMiddleware()]))
    assert not graph_steers(create_agent(model, tools=[]))
