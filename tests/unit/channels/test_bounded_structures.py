"""In-process structures that grow with chats or runs stay within their documented bounds.

Issue 20: a long-running bot sees ever more chats; any table keyed by chat, message or run must
hold at most its bound however many keys it is fed. Sizes only, no timings.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from agent.loop_detection import MAX_TRACKED_RUNS, LoopDetectionMiddleware
from channels.discord.inbound import REMEMBERED as _REMEMBERED
from channels.discord.inbound import remember as _remember
from channels.telegram.pacing import MAX_CHATS, ChatPacer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_pacer_holds_at_most_max_chats_however_many_chats_send() -> None:
    pacer = ChatPacer(clock=Clock(), max_chats=100)
    for chat in range(1_000):
        pacer.reserve(str(chat))
    assert len(pacer) == 100


def test_pacer_drops_the_least_recently_used_chat_first() -> None:
    pacer = ChatPacer(clock=Clock(), max_chats=3)
    for chat in ("1", "2", "3"):
        pacer.reserve(chat)
    pacer.reserve("1")  # used again: now the most recent
    pacer.reserve("4")
    assert pacer.chats() == ["3", "1", "4"]


def test_pacer_default_bound_holds_for_more_chats_than_it() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    for chat in range(MAX_CHATS + 2_000):
        pacer.reserve(str(-chat))  # group chats: their windows stay live for a minute
    assert len(pacer) == MAX_CHATS


def test_pacer_forgets_idle_chats_well_before_the_bound() -> None:
    clock = Clock()
    pacer = ChatPacer(clock=clock)
    for round_ in range(20):
        for chat in range(500):
            pacer.reserve(str(round_ * 500 + chat))
        clock.now += 61  # every chat of this round falls idle
    assert len(pacer) <= 500 + 256  # this round's chats, plus at most one sweep's worth


def test_discord_maps_keep_at_most_their_bound() -> None:
    store: OrderedDict[str, Any] = OrderedDict()
    for i in range(_REMEMBERED + 1_000):
        _remember(store, str(i), True)
    assert len(store) == _REMEMBERED
    assert next(iter(store)) == str(1_000)  # the oldest went first


def test_loop_detection_tracks_at_most_max_runs() -> None:
    middleware = LoopDetectionMiddleware(warnings=None, max_runs=50)  # type: ignore[arg-type]
    for run in range(500):
        middleware._run(f"run-{run}")
    assert middleware.tracked_runs() == 50
    assert MAX_TRACKED_RUNS >= 50
