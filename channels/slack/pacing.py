"""Slack's send limits, as the windows each Web API call books before it is made.

`chat.postMessage` allows about one message a second in a channel (short bursts tolerated); the
streaming API (`chat.startStream` / `appendStream` / `stopStream`), ephemeral notices and file
shares land in the channel too, so they count toward it. `chat.update` is Tier 3: about 50 a
minute per workspace, so an edit books its channel and its workspace's update window. Reads for
conversation context (`conversations.history` / `.replies`, Tier 3, and `users.info`, Tier 4)
book their workspace's read and lookup windows, and only when those have room at once. Streamed
updates, final messages and notices thus share one budget per channel, counted by this process
(`LocalPacer`) or by the fleet (`channels.pacing.SharedPacer`, owner = the app installation).
A 429 is still waited out by slack-sdk's retry handler; pacing only makes it rare.
"""

from __future__ import annotations

from dataclasses import dataclass

from channels.send_budget import Pacer, Quota, Rate, book

__all__ = [
    "CHANNEL",
    "LOOKUPS",
    "READS",
    "SEND_LIMITS",
    "UPDATES",
    "SlackLimits",
    "SlackPacing",
]

CHANNEL = Rate(limit=1, seconds=1.0)  # messages, stream calls and notices per channel
UPDATES = Rate(limit=50, seconds=60.0)  # chat.update per workspace (Tier 3)
READS = Rate(limit=50, seconds=60.0)  # conversations.history/.replies per workspace (Tier 3)
LOOKUPS = Rate(limit=100, seconds=60.0)  # users.info per workspace (Tier 4)


@dataclass(frozen=True, slots=True)
class SlackLimits:
    channel: Rate = CHANNEL
    updates: Rate = UPDATES
    reads: Rate = READS
    lookups: Rate = LOOKUPS


SEND_LIMITS = SlackLimits()


class SlackPacing:
    """Waits on the adapter's `Pacer` for the windows a Slack call books."""

    def __init__(self, pacer: Pacer, limits: SlackLimits = SEND_LIMITS) -> None:
        self._pacer = pacer
        self._limits = limits

    async def post(self, channel: str) -> None:
        """Before a message, a stream call, an ephemeral notice or a file share in `channel`."""
        await book(self._pacer, [Quota(f"c:{channel}", self._limits.channel)])

    async def update(self, channel: str, workspace: str) -> None:
        """Before a `chat.update` of a message in `channel` of `workspace`."""
        await book(
            self._pacer,
            [
                Quota(f"c:{channel}", self._limits.channel),
                Quota(f"update:{workspace}", self._limits.updates),
            ],
        )

    async def read(self, workspace: str) -> bool:
        """Book one history read (`conversations.history` / `.replies`) in `workspace` if the
        budget allows it now; a context read never waits for one (False: skip it)."""
        return await self._pacer.try_now([Quota(f"read:{workspace}", self._limits.reads)])

    async def hold_reads(self, workspace: str, seconds: float) -> None:
        """Slack answered a history read with 429: no more reads there for `seconds` (the
        one-a-minute limit of apps outside the Marketplace is met once, not every turn)."""
        await self._pacer.hold([Quota(f"read:{workspace}", self._limits.reads)], seconds)

    async def lookup(self, workspace: str) -> bool:
        """Book one `users.info` in `workspace` if the budget allows it now."""
        return await self._pacer.try_now([Quota(f"users:{workspace}", self._limits.lookups)])
