"""The per-chat send budget, on a fake clock (no real waiting)."""

from __future__ import annotations

from channels.telegram.pacing import ChatPacer, Window


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_private_chat_gets_one_message_per_second() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    assert [pacer.reserve("7") for _ in range(3)] == [0.0, 1.0, 2.0]


def test_group_may_burst_twenty_then_waits_for_the_minute_window() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    delays = [pacer.reserve("-100") for _ in range(21)]
    assert delays[:20] == [0.0] * 20
    assert delays[20] == 60.0


def test_chats_have_separate_budgets() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    assert pacer.reserve("7") == 0.0
    assert pacer.reserve("8") == 0.0
    assert pacer.reserve("7") == 1.0


def test_budget_frees_up_as_time_passes() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    pacer.reserve("7")
    clock.now += 5
    assert pacer.reserve("7") == 0.0


async def test_wait_sleeps_for_the_reserved_slot() -> None:
    clock = Clock()
    pacer = ChatPacer(private=Window(limit=2, seconds=10.0), clock=clock, sleep=clock.sleep)
    start = clock.now
    for _ in range(3):
        await pacer.wait("7")
    assert clock.now - start == 10.0


def test_idle_chats_are_forgotten() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    for chat in range(300):
        pacer.reserve(str(chat))
    clock.now += 120
    for _ in range(256):
        pacer.reserve("1")
    assert set(pacer.chats()) == {"1"}


async def test_try_now_takes_a_free_slot_and_leaves_a_taken_one_alone() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    assert await pacer.try_now("7") is True
    assert await pacer.try_now("7") is False
    assert pacer.reserve("7") == 1.0  # the refused try booked nothing
    assert await pacer.try_now("8") is True


async def test_a_hold_makes_the_chats_next_send_wait_until_it_ends() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    assert pacer.reserve("-100") == 0.0
    await pacer.hold("-100", 7.0)  # a group: 20 a minute, all of them held
    assert pacer.reserve("-100") == 7.0
    assert pacer.reserve("7") == 0.0  # other chats are not held
