"""Block Kit for clarification questions, and the adapter's declared capabilities."""

from __future__ import annotations

from channels.adapter import Markup, QuestionPrompt
from channels.slack import LIMITS, parse_button_value, question_blocks


def test_limits_declare_slack_mrkdwn_at_4000_chars() -> None:
    assert (LIMITS.max_len, LIMITS.len_unit, LIMITS.markup) == (4000, "chars", Markup.SLACK_MRKDWN)
    assert LIMITS.can_edit and LIMITS.buttons and LIMITS.reactions


def test_question_has_a_section_and_one_button_per_option() -> None:
    prompt = QuestionPrompt("q1", ("alpha", "beta", "gamma"), "U1")
    blocks = question_blocks("Which one do you mean?", prompt)
    assert blocks[0] == {
        "type": "section",
        "text": {"type": "mrkdwn", "text": "Which one do you mean?"},
    }
    (actions,) = blocks[1:]
    assert actions["type"] == "actions"
    labels = [b["text"]["text"] for b in actions["elements"]]
    assert labels == ["alpha", "beta", "gamma"]
    for i, button in enumerate(actions["elements"]):
        assert button["action_id"] == button["value"] == f"q:q1:{i}"
        assert parse_button_value(button["value"]) == ("q1", i)


def test_many_options_spread_over_actions_blocks_of_25() -> None:
    prompt = QuestionPrompt("q1", tuple(f"o{i}" for i in range(30)), "U1")
    blocks = question_blocks("pick", prompt)
    actions = [b for b in blocks if b["type"] == "actions"]
    assert [len(b["elements"]) for b in actions] == [25, 5]
    assert len({b["block_id"] for b in actions}) == 2


def test_long_option_labels_are_cut_to_75_chars() -> None:
    blocks = question_blocks("pick", QuestionPrompt("q1", ("x" * 200,), "U1"))
    label = blocks[-1]["elements"][0]["text"]["text"]
    assert len(label) == 75 and label.endswith("…")


def test_question_text_over_3000_chars_is_split_into_sections() -> None:
    text = "\n".join(["word " * 100] * 8)  # ~4000 chars
    blocks = question_blocks(text, QuestionPrompt("q1", ("a",), "U1"))
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert len(sections) == 2
    assert all(len(s) <= 3000 for s in sections)
    assert "".join(sections).replace("\n", "") == text.replace("\n", "")
