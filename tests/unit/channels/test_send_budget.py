"""This process's send windows (`LocalPacer`) and the quotas Slack and Discord calls book, on a
fake clock (no real waiting)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from channels.discord.pacing import DiscordLimits, DiscordPacing
from channels.send_budget import BudgetBusy, LocalPacer, Quota, Rate, book, cosmetic
from channels.slack.pacing import SlackLimits, SlackPacing


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class Recorder:
    """A `Pacer` that only notes what it was asked to book."""

    def __init__(self) -> None:
        self.booked: list[list[Quota]] = []

    async def wait(self, quotas: Sequence[Quota]) -> None:
        self.booked.append(list(quotas))


ONE_A_SECOND = Rate(limit=1, seconds=1.0)
FIVE_PER_FIVE = Rate(limit=5, seconds=5.0)


def test_a_scope_gets_its_limit_per_window_then_waits() -> None:
    pacer = LocalPacer(clock=Clock())
    channel = [Quota("c:1", FIVE_PER_FIVE)]
    assert [pacer.reserve(channel) for _ in range(7)] == [0.0] * 5 + [5.0, 5.0]


async def test_try_now_books_only_a_send_that_may_go_at_once() -> None:
    clock = Clock()
    pacer = LocalPacer(clock=clock)
    channel = [Quota("c:1", ONE_A_SECOND)]
    assert await pacer.try_now(channel) is True
    assert await pacer.try_now(channel) is False  # the window is full: nothing booked
    assert pacer.reserve(channel) == 1.0  # so a real send still gets the next slot
    clock.now += 2.0
    assert await pacer.try_now(channel) is True


async def test_a_cosmetic_call_takes_a_free_slot_or_yields_without_booking() -> None:
    clock = Clock()
    pacer = LocalPacer(clock=clock, sleep=clock.sleep)
    channel = [Quota("c:1", ONE_A_SECOND)]
    with cosmetic():
        await book(pacer, channel)  # free: taken at once
        with pytest.raises(BudgetBusy):
            await book(pacer, channel)
    started = clock.now
    await book(pacer, channel)  # a real send waits for the next slot, not one more behind
    assert clock.now - started == 1.0


async def test_a_hold_fills_the_window_until_it_ends() -> None:
    clock = Clock()
    pacer = LocalPacer(clock=clock)
    channel = [Quota("c:1", FIVE_PER_FIVE)]
    await pacer.hold(channel, 3.0)
    assert pacer.reserve(channel) == 3.0
    clock.now += 3.0
    assert pacer.reserve(channel) == 0.0  # the hold has ended


def test_scopes_have_separate_windows() -> None:
    pacer = LocalPacer(clock=Clock())
    assert pacer.reserve([Quota("c:1", ONE_A_SECOND)]) == 0.0
    assert pacer.reserve([Quota("c:2", ONE_A_SECOND)]) == 0.0
    assert pacer.reserve([Quota("c:1", ONE_A_SECOND)]) == 1.0


def test_a_call_waits_for_the_tightest_of_its_windows() -> None:
    pacer = LocalPacer(clock=Clock())
    bot = Quota("all", Rate(limit=2, seconds=1.0))
    delays = [pacer.reserve([bot, Quota(f"c:{n}", FIVE_PER_FIVE)]) for n in range(4)]
    assert delays == [0.0, 0.0, 1.0, 1.0]  # different channels, one bot window


def test_a_slot_pushed_late_by_one_window_still_counts_in_the_other() -> None:
    pacer = LocalPacer(clock=Clock())
    bot = Quota("all", Rate(limit=1, seconds=3.0))
    busy = Quota("c:1", Rate(limit=2, seconds=10.0))
    assert pacer.reserve([bot, busy]) == 0.0
    assert pacer.reserve([bot, busy]) == 3.0  # the bot's window pushed it to +3
    # the channel's two slots (now and +3) are taken: the next may go 10 s after the first
    assert pacer.reserve([busy]) == 10.0


async def test_wait_sleeps_until_the_booked_slot() -> None:
    clock = Clock()
    pacer = LocalPacer(clock=clock, sleep=clock.sleep)
    start = clock.now
    for _ in range(3):
        await pacer.wait([Quota("c:1", ONE_A_SECOND)])
    assert clock.now - start == 2.0


def test_windows_free_up_as_time_passes() -> None:
    clock = Clock()
    pacer = LocalPacer(clock=clock)
    pacer.reserve([Quota("c:1", ONE_A_SECOND)])
    clock.now += 1.0
    assert pacer.reserve([Quota("c:1", ONE_A_SECOND)]) == 0.0


def test_the_table_of_scopes_is_bounded() -> None:
    pacer = LocalPacer(clock=Clock(), max_scopes=3)
    for n in range(10):
        pacer.reserve([Quota(f"c:{n}", ONE_A_SECOND)])
    assert len(pacer) == 3


def test_idle_scopes_are_swept() -> None:
    clock = Clock()
    pacer = LocalPacer(clock=clock)
    for n in range(200):
        pacer.reserve([Quota(f"c:{n}", ONE_A_SECOND)])
    clock.now += 2.0
    for _ in range(56):  # the 256th booking sweeps
        pacer.reserve([Quota("c:live", Rate(limit=1000, seconds=1.0))])
    assert len(pacer) == 1


async def test_slack_messages_book_the_channel_and_edits_the_workspace_too() -> None:
    pacer = Recorder()
    limits = SlackLimits()
    pacing = SlackPacing(pacer, limits)
    await pacing.post("C1")
    await pacing.update("C1", "T1")
    assert pacer.booked == [
        [Quota("c:C1", Rate(1, 1.0))],
        [Quota("c:C1", Rate(1, 1.0)), Quota("update:T1", Rate(50, 60.0))],
    ]
    assert (limits.channel, limits.updates) == (Rate(1, 1.0), Rate(50, 60.0))


async def test_discord_sends_book_the_channel_and_the_bot() -> None:
    pacer = Recorder()
    await DiscordPacing(pacer, DiscordLimits()).send("42")
    assert pacer.booked == [[Quota("all", Rate(50, 1.0)), Quota("c:42", Rate(5, 5.0))]]
