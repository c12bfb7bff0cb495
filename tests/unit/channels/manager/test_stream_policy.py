"""When a worker streams: from the start, and while a recent reply was slow enough to be seen
streaming; fast replies alone switch the per-token cost off."""

from __future__ import annotations

from channels.manager.stream_policy import StreamPolicy


def test_a_new_worker_streams_until_it_has_seen_enough_replies() -> None:
    policy = StreamPolicy(1.0, window=8, warmup=3)
    for _ in range(2):
        assert policy.wanted()
        policy.record(0.01)
    assert policy.wanted()
    policy.record(0.01)
    assert not policy.wanted()


def test_one_slow_reply_in_the_window_keeps_streaming_on() -> None:
    policy = StreamPolicy(1.0, window=4, warmup=2)
    for seconds in (0.1, 0.1, 2.5):
        policy.record(seconds)
    assert policy.wanted()
    for _ in range(3):
        policy.record(0.1)
        assert policy.wanted()  # the slow reply is still among the last four
    policy.record(0.1)
    assert not policy.wanted()  # it has left the window


def test_a_reply_exactly_at_the_threshold_counts_as_slow() -> None:
    policy = StreamPolicy(1.0, window=4, warmup=1)
    policy.record(1.0)
    assert policy.wanted()


def test_slow_replies_leaving_the_window_are_forgotten_one_by_one() -> None:
    policy = StreamPolicy(1.0, window=3, warmup=1)
    for seconds in (3.0, 3.0, 0.1, 0.1):
        policy.record(seconds)
    assert policy.wanted()  # one of the two slow ones is still in
    policy.record(0.1)
    assert not policy.wanted()


def test_a_zero_threshold_streams_every_reply() -> None:
    policy = StreamPolicy(0.0, window=2, warmup=1)
    for _ in range(5):
        policy.record(0.001)
    assert policy.wanted()
