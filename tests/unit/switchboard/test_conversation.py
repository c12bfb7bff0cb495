"""The context values every layer shares: message order across platforms' ids, the catch-up
mark, and the JSON round trip of a context message."""

from __future__ import annotations

import pytest

from switchboard.conversation import ContextMark, ContextMessage, message_order

__all__: list[str] = []


def test_slack_timestamps_order_by_their_microseconds_not_as_floats() -> None:
    ids = ["1700000000.000100", "1700000000.000099", "1699999999.999999", "1700000000.000101"]
    assert sorted(ids, key=message_order) == [
        "1699999999.999999",
        "1700000000.000099",
        "1700000000.000100",
        "1700000000.000101",
    ]


def test_snowflakes_and_telegram_ids_order_as_integers_and_foreign_ids_sort_first() -> None:
    assert sorted(["120", "99", "ext:-100:5", "1000"], key=message_order) == [
        "ext:-100:5",
        "99",
        "120",
        "1000",
    ]


def test_a_mark_catches_up_from_its_trigger_and_a_retry_sees_what_its_first_attempt_saw() -> None:
    mark = ContextMark(at="20", previous="10")
    assert mark.since("30") == "20"  # a later turn: from where the last one ended
    assert mark.since("20") == "10"  # the same batch again
    assert ContextMark(at="20").since("20") is None  # a retried first contact


@pytest.mark.parametrize("mark", [ContextMark(at="20", previous="10"), ContextMark(at="1.5")])
def test_a_mark_round_trips_through_its_encoding(mark: ContextMark) -> None:
    assert ContextMark.decode(mark.encode()) == mark


@pytest.mark.parametrize("raw", ["", "20", "10|", "|"])
def test_a_garbled_mark_reads_as_none(raw: str) -> None:
    assert ContextMark.decode(raw) is None


def test_a_context_message_round_trips_and_ignores_unknown_keys() -> None:
    message = ContextMessage(
        "7", "Ann", 1.5, "hi", ("a.png",), is_self=True, replied_to=True, reply_to_id="6", quote="h"
    )
    assert ContextMessage.from_dict({**message.as_dict(), "from_the_future": 1}) == message
    assert ContextMessage.from_dict({"message_id": 8}) == ContextMessage("8", "", 0.0, "")


@pytest.mark.parametrize("data", [[], "text", {"sender": "no id"}])
def test_what_is_not_a_context_message_is_refused(data: object) -> None:
    with pytest.raises((TypeError, KeyError)):
        ContextMessage.from_dict(data)  # type: ignore[arg-type]
