"""Slack (slack-bolt): Socket Mode or the Events API, threads, Block Kit buttons."""

from channels.slack.adapter import (
    DEFAULT_API_BASE,
    LIMITS,
    BotIdentity,
    SlackAdapter,
    is_for_bot,
    parse_button_value,
    question_blocks,
    to_inbound,
)

__all__ = [
    "DEFAULT_API_BASE",
    "LIMITS",
    "BotIdentity",
    "SlackAdapter",
    "is_for_bot",
    "parse_button_value",
    "question_blocks",
    "to_inbound",
]
