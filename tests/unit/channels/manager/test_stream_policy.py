"""When a worker streams: from the start, and while at least a quarter of its recent replies were
slow enough to be seen streaming; fast replies switch the per-token cost off, and a lone slow turn
(a cold start, a GC pause) does not switch it back on."""

from __future__ import annotations

from channels.manager.turns.stream_policy import StreamPolicy


def test_a_new_worker_streams_until_it_has_seen_enough_replies() -> None:
    policy = StreamPolicy(1.0, window=8, warmup=3)
    for _ in range(2):
        assert policy.wanted()
        policy.record(0.01)
    assert policy.wanted()
    policy.record(0.01)
    assert not policy.wanted()


def test_a_lone_slow_turn_such_as_the_first_does_not_keep_streaming_on() -> None:
    policy = StreamPolicy(1.0, window=32, warmup=8)
    policy.record(3.0)  # the process's first turn: imports, connections
    for _ in range(7):
        policy.record(0.05)
    assert not policy.wanted()


def test_a_quarter_of_slow_replies_keeps_streaming_on() -> None:
    policy = StreamPolicy(1.0, window=8, warmup=2)
    for seconds in (0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 2.0):
        policy.record(seconds)
    assert not policy.wanted()  # one in seven
    policy.record(2.5)
    assert policy.wanted()  # two in eight


def test_slow_replies_leaving_the_window_are_forgotten() -> None:
    policy = StreamPolicy(1.0, window=4, warmup=1)
    for seconds in (3.0, 3.0, 0.1, 0.1):
        policy.record(seconds)
    assert policy.wanted()  # two in four
    policy.record(0.1)
    assert policy.wanted()  # one in four: still a quarter
    policy.record(0.1)
    assert not policy.wanted()  # none left


def test_a_reply_exactly_at_the_threshold_counts_as_slow() -> None:
    policy = StreamPolicy(1.0, window=4, warmup=1)
    policy.record(1.0)
    assert policy.wanted()


def test_a_zero_threshold_streams_every_reply() -> None:
    policy = StreamPolicy(0.0, window=2, warmup=1)
    for _ in range(5):
        policy.record(0.001)
    assert policy.wanted()


def test_no_more_streams_than_the_cap_run_at_once() -> None:
    policy = StreamPolicy(0.0, max_open=2)
    policy.opened()
    assert policy.wanted()
    policy.opened()
    assert not policy.wanted()  # a third reply is asked for whole
    policy.closed()
    assert policy.wanted()


def test_a_slow_time_in_a_crowded_worker_does_not_switch_streaming_on() -> None:
    """In a burst a fast model's runs wait for the worker and look slow; only an uncrowded slow
    run says the model is slow, while a fast run counts however crowded the worker."""
    policy = StreamPolicy(1.0, window=4, warmup=1, max_open=2)
    for _ in range(4):
        policy.record(0.1)
    assert not policy.wanted()
    for _ in range(4):
        policy.record(2.0, running=3)  # crowded: more runs than streams
    assert not policy.wanted()
    policy.record(2.0, running=2)
    assert policy.wanted()  # one in four, measured with room to spare
    for _ in range(4):
        policy.record(0.1, running=50)
    assert not policy.wanted()  # fast even in a crowd: counted
