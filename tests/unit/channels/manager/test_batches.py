"""Which queued messages one turn answers: typed messages joined in order up to a size, a button
press alone, unreadable and stale entries dropped (but still marked answered)."""

from __future__ import annotations

from typing import Any

from channels.manager.codec import encode_message
from channels.manager.turns.batches import join_messages, pick_batch
from channels.message import ButtonPress, InboundMessage, Platform
from switchboard.state import PendingQuestion, QueuedItem

__all__: list[str] = []

QUESTION = PendingQuestion(
    asker_id="u1", text="Which one?", options=("alpha", "beta", "gamma"), question_id="q-1"
)


def _msg(text: str, sender: str = "u1", **overrides: Any) -> InboundMessage:
    fields: dict[str, Any] = {
        "platform": Platform.SLACK,
        "workspace_id": "T1",
        "chat_id": "C1",
        "sender_id": sender,
        "sender_name": f"name-{sender}",
        "text": text,
        "provider_message_id": f"ts-{text}",
    }
    fields.update(overrides)
    return InboundMessage(**fields)


def _press(question_id: str, option: int, sender: str = "u1") -> InboundMessage:
    return _msg("", sender, button=ButtonPress(question_id, option, f"press-{option}"))


def _items(*messages: InboundMessage | bytes) -> list[QueuedItem]:
    return [
        QueuedItem(f"e{i}", m if isinstance(m, bytes) else encode_message(m))
        for i, m in enumerate(messages)
    ]


def test_queued_messages_are_joined_in_order_with_sender_names_in_a_group() -> None:
    batch = pick_batch(_items(_msg("one", "u1"), _msg("two", "u2")), None, max_chars=1000)
    assert batch.text == "name-u1: one\n\nname-u2: two"
    assert batch.entry_ids == ["e0", "e1"]
    assert [m.text for m in batch.messages] == ["one", "two"]
    assert batch.last.text == "two"
    assert (batch.resume, batch.dropped) == (False, 0)


def test_a_dm_batch_and_a_single_message_carry_no_names() -> None:
    dms = pick_batch(_items(_msg("a", is_dm=True), _msg("b", is_dm=True)), None, max_chars=1000)
    assert dms.text == "a\n\nb"
    single = pick_batch(_items(_msg("only")), None, max_chars=1000)
    assert single.text == "only"


def test_a_sender_without_a_name_is_shown_by_id() -> None:
    text = join_messages([_msg("a", "u1", sender_name=""), _msg("b", "u2")], shared=True)
    assert text == "u1: a\n\nname-u2: b"


def test_the_batch_stops_before_max_chars_would_be_exceeded() -> None:
    items = _items(_msg("aaaa"), _msg("bbbb"), _msg("cccc"))
    # joined in a group: "name-u1: aaaa\n\nname-u1: bbbb" is 28 characters
    batch = pick_batch(items, None, max_chars=28)
    assert batch.entry_ids == ["e0", "e1"]
    assert len(batch.text) == 28
    assert pick_batch(items, None, max_chars=7).entry_ids == ["e0"]


def test_a_first_message_longer_than_max_chars_still_makes_a_batch_alone() -> None:
    batch = pick_batch(_items(_msg("x" * 50), _msg("y")), None, max_chars=10)
    assert batch.entry_ids == ["e0"]
    assert batch.text == "x" * 50


def test_a_press_for_the_open_question_is_answered_alone_with_the_option_text() -> None:
    batch = pick_batch(_items(_press("q-1", 1), _msg("later")), QUESTION, max_chars=1000)
    assert (batch.text, batch.resume, batch.entry_ids) == ("beta", True, ["e0"])
    assert batch.last.button == ButtonPress("q-1", 1, "press-1")


def test_a_press_behind_typed_messages_waits_for_its_own_turn() -> None:
    batch = pick_batch(_items(_msg("first"), _press("q-1", 0)), QUESTION, max_chars=1000)
    assert batch.entry_ids == ["e0"]
    assert batch.messages[0].button is None


def test_a_press_for_a_question_no_longer_open_is_dropped() -> None:
    stale = pick_batch(_items(_press("q-old", 0), _msg("hi")), QUESTION, max_chars=1000)
    assert stale.entry_ids == ["e0", "e1"]  # the dropped press is marked answered too
    assert [m.text for m in stale.messages] == ["hi"]
    assert stale.dropped == 1

    no_question = pick_batch(_items(_press("q-1", 0)), None, max_chars=1000)
    assert (no_question.messages, no_question.entry_ids, no_question.dropped) == ([], ["e0"], 1)
    assert (no_question.text, no_question.resume) == ("", False)


def test_corrupt_entries_are_dropped_and_marked_answered() -> None:
    batch = pick_batch(_items(b"{garbage", _msg("ok"), b"null"), None, max_chars=1000)
    assert [m.text for m in batch.messages] == ["ok"]
    assert sorted(batch.entry_ids) == ["e0", "e1", "e2"]  # finish marks all three answered
    assert batch.dropped == 2

    nothing = pick_batch(_items(b"", b"[]"), None, max_chars=1000)
    assert (nothing.messages, nothing.entry_ids, nothing.dropped) == ([], ["e0", "e1"], 2)


def test_a_corrupt_entry_before_a_press_is_dropped_with_it() -> None:
    batch = pick_batch(_items(b"{garbage", _press("q-1", 2)), QUESTION, max_chars=1000)
    assert (batch.text, batch.entry_ids, batch.dropped) == ("gamma", ["e0", "e1"], 1)


def test_a_bare_number_answering_an_open_question_picks_that_option() -> None:
    for typed in ("2", " 2 ", "2.", "2)"):
        batch = pick_batch(_items(_msg(typed)), QUESTION, max_chars=1000)
        assert (batch.text, batch.resume) == ("beta", True), typed


def test_a_number_out_of_range_or_with_words_is_passed_through_as_the_answer() -> None:
    for typed in ("4", "0", "2 please"):
        batch = pick_batch(_items(_msg(typed)), QUESTION, max_chars=1000)
        assert (batch.text, batch.resume) == (typed, True), typed


def test_a_number_without_an_open_question_is_just_text() -> None:
    batch = pick_batch(_items(_msg("2")), None, max_chars=1000)
    assert (batch.text, batch.resume) == ("2", False)


def test_several_messages_answering_a_question_are_joined_not_picked() -> None:
    batch = pick_batch(_items(_msg("2", "u1"), _msg("3", "u2")), QUESTION, max_chars=1000)
    assert (batch.text, batch.resume) == ("name-u1: 2\n\nname-u2: 3", True)


def test_an_empty_queue_is_an_empty_batch() -> None:
    batch = pick_batch([], QUESTION, max_chars=1000)
    assert (batch.messages, batch.entry_ids, batch.text, batch.resume) == ([], [], "", False)


def test_a_press_for_an_option_that_does_not_exist_is_dropped_not_a_crash() -> None:
    from channels.manager.codec import encode_message as encode
    from channels.manager.turns.batches import pick_batch as pick
    from channels.message import ButtonPress, InboundMessage, Platform
    from switchboard.state import PendingQuestion, QueuedItem

    question = PendingQuestion(asker_id="U1", text="Which?", options=("a", "b"))
    press = InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T",
        chat_id="C",
        sender_id="U1",
        sender_name="",
        text="",
        provider_message_id="p",
        button=ButtonPress(question.question_id, 7),
    )
    batch = pick([QueuedItem("000-1", encode(press))], question, max_chars=100)
    assert batch.messages == [] and batch.entry_ids == ["000-1"] and batch.dropped == 1


def test_a_joined_batch_counts_its_separators_and_names_against_max_chars() -> None:
    items = _items(_msg("a" * 100), _msg("b" * 100), _msg("c" * 100))
    for limit in range(100, 400):
        batch = pick_batch(items, None, max_chars=limit)
        assert len(batch.entry_ids) == 1 or len(batch.text) <= limit, limit
    assert pick_batch(items, None, max_chars=219).entry_ids == ["e0"]
    assert pick_batch(items, None, max_chars=220).entry_ids == ["e0", "e1"]


def test_a_joined_dm_batch_counts_only_its_separators() -> None:
    items = _items(_msg("a" * 100, is_dm=True), _msg("b" * 100, is_dm=True))
    assert pick_batch(items, None, max_chars=201).entry_ids == ["e0"]
    batch = pick_batch(items, None, max_chars=202)
    assert (batch.entry_ids, len(batch.text)) == (["e0", "e1"], 202)
