"""Telegram (aiogram): polling or webhook, groups, reply chains, forum topics, buttons, pacing."""

from channels.telegram.adapter import (
    LIMITS,
    BotIdentity,
    TelegramAdapter,
    is_for_bot,
    to_inbound,
)

__all__ = [
    "LIMITS",
    "BotIdentity",
    "TelegramAdapter",
    "is_for_bot",
    "to_inbound",
]
