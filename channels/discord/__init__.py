"""Discord (discord.py): the gateway, bot-created threads, buttons."""

from channels.discord.adapter import (
    INTENTS,
    LIMITS,
    BotIdentity,
    DiscordAdapter,
    is_for_bot,
    press_to_inbound,
    to_inbound,
)

__all__ = [
    "INTENTS",
    "LIMITS",
    "BotIdentity",
    "DiscordAdapter",
    "is_for_bot",
    "press_to_inbound",
    "to_inbound",
]
