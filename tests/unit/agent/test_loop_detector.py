"""Loop detection decisions: signatures, the identical-call window and the per-tool layer."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolCall

from agent.loop_detection import (
    LoopDetector,
    LoopPolicy,
    Verdict,
    call_signature,
    warning_message,
)


def _call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args, id=f"id-{name}", type="tool_call")


def _feed(detector: LoopDetector, calls: list[ToolCall], times: int) -> list[Verdict | None]:
    return [detector.observe(calls) for _ in range(times)]


def test_signature_ignores_call_order_and_ids() -> None:
    a = [_call("search", q="x"), _call("fetch", url="u")]
    b = [_call("fetch", url="u"), _call("search", q="x")]
    b[0]["id"] = "other"
    assert call_signature(a) == call_signature(b)


def test_signature_ignores_key_order_whitespace_and_empty_args() -> None:
    a = [_call("search", q="hello   world", page=1, lang=None)]
    b = [_call("search", page=1, q=" hello world ")]
    assert call_signature(a) == call_signature(b)


def test_signature_differs_for_different_args_or_names() -> None:
    base = call_signature([_call("search", q="x")])
    assert call_signature([_call("search", q="y")]) != base
    assert call_signature([_call("lookup", q="x")]) != base


def test_salient_args_limit_what_counts_as_the_same_call() -> None:
    salient = {"read": ("path",)}
    a = [_call("read", path="/a", request_id="1")]
    b = [_call("read", path="/a", request_id="2")]
    assert call_signature(a, salient) == call_signature(b, salient)
    assert call_signature(a) != call_signature(b)


def test_third_identical_response_warns_once_and_fifth_stops() -> None:
    detector = LoopDetector(LoopPolicy())
    verdicts = _feed(detector, [_call("current_time")], 5)
    assert verdicts[:2] == [None, None]
    assert verdicts[2] is not None and verdicts[2].warning and not verdicts[2].stop
    assert verdicts[3] is None
    assert verdicts[4] == Verdict(stop=True)


def test_warning_text_has_no_framework_markers() -> None:
    detector = LoopDetector(LoopPolicy())
    warning = _feed(detector, [_call("current_time")], 3)[2]
    assert warning is not None
    assert "[" not in warning.warning and "current_time" in warning.warning


def test_identical_calls_outside_the_window_are_forgotten() -> None:
    detector = LoopDetector(LoopPolicy(window=4))
    same = [_call("search", q="x")]
    assert detector.observe(same) is None
    assert detector.observe(same) is None
    for i in range(4):
        assert detector.observe([_call("search", q=str(i))]) is None
    # the two earlier calls slid out of the window, so this is the first again
    assert detector.observe(same) is None
    assert detector.observe(same) is None


def test_varied_calls_never_trip_the_identical_layer() -> None:
    detector = LoopDetector(LoopPolicy())
    verdicts = [detector.observe([_call("search", q=str(i))]) for i in range(29)]
    assert verdicts == [None] * 29


def test_frequency_layer_warns_at_30_and_stops_at_50_calls_of_one_tool() -> None:
    detector = LoopDetector(LoopPolicy())
    verdicts = [detector.observe([_call("search", q=str(i))]) for i in range(50)]
    flagged = {i + 1: v for i, v in enumerate(verdicts) if v is not None}
    assert list(flagged) == [30, 50]
    assert flagged[30].warning and "search" in flagged[30].warning and not flagged[30].stop
    assert flagged[50].stop


def test_frequency_counts_every_call_in_a_response() -> None:
    detector = LoopDetector(LoopPolicy(warn_per_tool=4, stop_per_tool=100))
    assert detector.observe([_call("a", n=1), _call("a", n=2)]) is None
    verdict = detector.observe([_call("a", n=3), _call("a", n=4)])
    assert verdict is not None and verdict.warning


def test_per_tool_overrides_replace_the_default_limits() -> None:
    policy = LoopPolicy(per_tool={"poll_status": (100, 200), "expensive": (2, 3)})
    detector = LoopDetector(policy)
    for i in range(60):
        assert detector.observe([_call("poll_status", i=i)]) is None
    assert detector.observe([_call("expensive", i=1)]) is None
    warned = detector.observe([_call("expensive", i=2)])
    assert warned is not None and warned.warning
    stopped = detector.observe([_call("expensive", i=3)])
    assert stopped is not None and stopped.stop


def test_each_detector_is_independent() -> None:
    policy = LoopPolicy()
    first, second = LoopDetector(policy), LoopDetector(policy)
    _feed(first, [_call("current_time")], 4)
    assert _feed(second, [_call("current_time")], 2) == [None, None]


def test_warning_message_merges_and_deduplicates_with_blank_lines() -> None:
    message = warning_message(["first", "second", "first", "  ", "second "])
    assert message.name == "loop_warning"
    assert message.content == "first\n\nsecond"
