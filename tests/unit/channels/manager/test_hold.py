"""The thread hold: a lost lock cancels the work under it, but never bookkeeping of what already
happened, even when one protected step follows another at once."""

from __future__ import annotations

import asyncio

import pytest

from channels.manager.hold import LockLost, ThreadHold
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
