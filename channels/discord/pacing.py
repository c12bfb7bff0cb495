"""Discord's send limits, as the windows each message, edit or notice books before it is made.

Discord allows about 5 messages per 5 seconds in a channel, sends and edits together, and 50
requests a second for the whole bot. Each send, edit, streamed update and notice books its
channel's window and the bot's, counted by this process (`LocalPacer`) or by the fleet
(`channels.pacing.SharedPacer`, owner = the bot). discord.py still waits out any 429 itself (or
raises one past its limit, which the adapter turns into `PlatformRateLimited`): pacing only makes
them rare.
"""

from __future__ import annotations

from dataclasses import dataclass

from channels.send_budget import Pacer, Quota, Rate, book

__all__ = ["BOT", "CHANNEL", "SEND_LIMITS", "DiscordLimits", "DiscordPacing"]

CHANNEL = Rate(limit=5, seconds=5.0)  # messages and edits per channel
BOT = Rate(limit=50, seconds=1.0)  # requests per bot (the global limit)


@dataclass(frozen=True, slots=True)
class DiscordLimits:
    channel: Rate = CHANNEL
    bot: Rate = BOT


SEND_LIMITS = DiscordLimits()


class DiscordPacing:
    """Waits on the adapter's `Pacer` for the windows a Discord send books."""

    def __init__(self, pacer: Pacer, limits: DiscordLimits = SEND_LIMITS) -> None:
        self._pacer = pacer
        self._bot = Quota("all", limits.bot)
        self._channel = limits.channel

    async def send(self, channel_id: str) -> None:
        """Before a message, an edit or a notice in `channel_id`."""
        await book(self._pacer, [self._bot, Quota(f"c:{channel_id}", self._channel)])

    async def read(self) -> None:
        """Before a read for conversation context (history, a message, a member): Discord
        counts it in the bot's requests, not in a channel's send window."""
        await book(self._pacer, [self._bot])
