"""The thread hold: a lost lock cancels the work under it, but never bookkeeping of what already
happened, even when one protected step follows another at once."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from channels.manager.turns.hold import LockLost, ThreadHold
from switchboard.state import Lock, StopRequest

__all__: list[str] = []


class LostAfter:
    """A lock store whose lock is gone after `beats` beats."""

    def __init__(self, beats: int) -> None:
        self.beats = beats
        self.lost = asyncio.Event()

    async def keep(self, lock: Lock) -> tuple[bool, StopRequest]:
        self.beats -= 1
        if self.beats < 0:
            self.lost.set()
            return False, False
        return True, StopRequest.NONE

    async def release(self, lock: Lock) -> bool:
        return True

    async def request_stop(self, thread_id: str) -> bool:
        return False


LOCK = Lock("t1", "tok", 0.15)  # a beat every 50 ms


async def test_a_lost_lock_cancels_the_body_and_raises_lock_lost() -> None:
    store = LostAfter(beats=1)
    with pytest.raises(LockLost):
        async with ThreadHold(store, LOCK, on_stop=lambda _: None):
            await asyncio.sleep(5)


async def test_protected_steps_back_to_back_both_finish_before_the_loss_cancels() -> None:
    store = LostAfter(beats=0)
    done: list[str] = []
    hold = ThreadHold(store, LOCK, on_stop=lambda _: None)
    with pytest.raises(LockLost):
        async with hold:
            with hold.protected():  # a send under way when the loss is seen
                await store.lost.wait()
                await asyncio.sleep(0.1)
                done.append("send")
            with hold.protected():  # straight on to recording it: no await in between
                await asyncio.sleep(0.1)
                done.append("recorded")
            await asyncio.sleep(5)  # unprotected: cancelled here
    assert done == ["send", "recorded"]
    assert hold.lost


class DropsACancellation:
    """A lock store whose beat swallows the cancellation that lands while it finishes, as
    `asyncio.wait_for` (around every redis-py send) does on Python 3.11 (CPython gh-86296)."""

    def __init__(self) -> None:
        self.in_beat = asyncio.Event()
        self.beats = 0

    async def keep(self, lock: Lock) -> tuple[bool, StopRequest]:
        self.beats += 1
        if self.beats == 1:
            self.in_beat.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(5)
        return True, StopRequest.NONE

    async def release(self, lock: Lock) -> bool:
        return True

    async def request_stop(self, thread_id: str) -> bool:
        return False


async def test_the_hold_ends_and_its_keeper_stops_beating_when_a_cancellation_is_dropped() -> None:
    store = DropsACancellation()

    async def held() -> None:
        async with ThreadHold(store, LOCK, on_stop=lambda _: None):
            await store.in_beat.wait()  # leaving now cancels the keeper inside its beat

    task = asyncio.create_task(held())
    done, _ = await asyncio.wait({task}, timeout=1.0)
    assert task in done, "the hold still waits for a keeper that lived on"
    await task
    beats = store.beats
    await asyncio.sleep(0.2)  # four beat intervals
    assert store.beats == beats  # nobody extends a released lock
