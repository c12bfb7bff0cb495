"""Block Kit for clarification questions (the question text, then one button per option) and for
rated answers (the answer's text, then Slack's feedback buttons).

Each button's action_id and value are `q:<question_id>:<index>` (`slack_events.button_value`), which
the adapter's action listener matches and `to_inbound` turns back into a `ButtonPress`. Block Kit's
limits are Slack's: section text ≤ 3000 chars, ≤ 25 elements per actions block, labels ≤ 75 chars.
"""

from __future__ import annotations

from typing import Any

from channels.adapter import HomeView, QuestionPrompt
from channels.slack.events import (
    BUTTON_PREFIX,
    FEEDBACK_ACTION,
    STOP_ACTION,
    button_value,
    vote_value,
)

__all__ = ["answer_blocks", "home_blocks", "question_blocks", "stop_blocks"]

_SECTION_MAX = 3000  # Block Kit section text limit
_BUTTONS_PER_BLOCK = 25  # Block Kit actions block limit
_BUTTON_TEXT_MAX = 75  # Block Kit button label limit


def question_blocks(text: str, prompt: QuestionPrompt) -> list[dict[str, Any]]:
    """Block Kit for a question: its text in sections, then one button per option whose
    action_id and value are `q:<question_id>:<index>`."""
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": part}}
        for part in _split_section(text)
    ]
    buttons = [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": _label(option), "emoji": True},
            "action_id": button_value(prompt.question_id, i),
            "value": button_value(prompt.question_id, i),
        }
        for i, option in enumerate(prompt.options)
    ]
    for start in range(0, len(buttons), _BUTTONS_PER_BLOCK):
        blocks.append(
            {
                "type": "actions",
                "block_id": f"{BUTTON_PREFIX}{prompt.question_id}:{start // _BUTTONS_PER_BLOCK}",
                "elements": buttons[start : start + _BUTTONS_PER_BLOCK],
            }
        )
    return blocks


def answer_blocks(text: str, run_id: str) -> list[dict[str, Any]]:
    """Block Kit for an answer that can be rated: its text in sections, then a
    `context_actions` block with a `feedback_buttons` element whose values are
    `fb:<up|down>:<run_id>` (Slack shows the pressed one as chosen)."""
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": part}}
        for part in _split_section(text)
    ]
    blocks.append(
        {
            "type": "context_actions",
            "elements": [
                {
                    "type": "feedback_buttons",
                    "action_id": FEEDBACK_ACTION,
                    "positive_button": {
                        "text": {"type": "plain_text", "text": "👍"},
                        "value": vote_value("up", run_id),
                        "accessibility_label": "Good answer",
                    },
                    "negative_button": {
                        "text": {"type": "plain_text", "text": "👎"},
                        "value": vote_value("down", run_id),
                        "accessibility_label": "Bad answer",
                    },
                }
            ],
        }
    )
    return blocks


def stop_blocks(text: str, asker_id: str) -> list[dict[str, Any]]:
    """Block Kit for a reply being written: its text so far, then a Stop button that only the
    asker (or a workspace admin) may press; the final text replaces both."""
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": part}}
        for part in _split_section(text)
    ]
    blocks.append(
        {
            "type": "actions",
            "block_id": STOP_ACTION,
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Stop", "emoji": True},
                    "action_id": STOP_ACTION,
                    "value": f"{STOP_ACTION}:{asker_id}",
                    "style": "danger",
                }
            ],
        }
    )
    return blocks


def home_blocks(home: HomeView) -> dict[str, Any]:
    """The App Home view: what I do, the person's link state and usage, the commands."""

    def section(text: str) -> dict[str, Any]:
        return {"type": "section", "text": {"type": "mrkdwn", "text": _escape(text)}}

    def header(text: str) -> dict[str, Any]:
        return {"type": "header", "text": {"type": "plain_text", "text": text}}

    blocks = [
        header("Switchboard"),
        section(home.about),
        {"type": "divider"},
        header("Your access"),
        section(home.link),
        header("Your usage"),
        section(home.usage),
        {"type": "divider"},
        header("Commands"),
        section("\n".join(home.commands)),
    ]
    return {"type": "home", "blocks": blocks}


def _escape(text: str) -> str:
    """Plain text as mrkdwn that Slack shows literally, cut to a section's length."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text[:_SECTION_MAX]


def _split_section(text: str) -> list[str]:
    """Section texts ≤ 3000 chars, cut at line ends where possible (a chunk may be 4000)."""
    parts: list[str] = []
    while len(text) > _SECTION_MAX:
        cut = text.rfind("\n", 0, _SECTION_MAX)
        cut = cut if cut > 0 else _SECTION_MAX
        parts.append(text[:cut])
        text = text[cut:].lstrip("\n")
    if text.strip():
        parts.append(text)
    return parts


def _label(option: str) -> str:
    option = option.strip() or "…"
    return option if len(option) <= _BUTTON_TEXT_MAX else option[: _BUTTON_TEXT_MAX - 1] + "…"
