"""Telegram (aiogram): polling or webhook, groups, reply chains, forum topics, buttons, pacing."""

from channels.telegram.lazy_models import install as _defer_aiogram_models

_defer_aiogram_models()  # before aiogram is imported: its models build on first use

from channels.telegram.adapter import (  # noqa: E402 - after the hook above
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
