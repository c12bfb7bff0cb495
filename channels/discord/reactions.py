"""👍/👎 reactions as votes (with `votes`, feedback on): a reaction on an answer counts as a
press on its 👍/👎 button does. The reactions intents are asked for only then (no cost with
feedback off), the answer's run is read once from its own buttons, and the vote goes to the
manager shaped as a press, so one vote per person per answer holds across both (a later one
replaces it). Taking one away withdraws the vote unless the other is still on (asked of Discord,
one read).

A mixin of `DiscordAdapter` over `GatewaySessions` (see there why): it reads through the
adapter's client and pacing, and its tasks are counted by the read gate.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections import OrderedDict
from typing import Any

import structlog

from channels.adapter import deliver_until_taken
from channels.discord.errors import translated
from channels.discord.events import (
    other_vote_emoji,
    reaction_to_inbound,
    reaction_value,
    vote_run,
)
from channels.discord.gateway import GatewaySessions
from channels.discord.inbound import remember
from channels.discord.pacing import DiscordPacing
from channels.message import Platform
from switchboard.errors import PlatformError

__all__ = ["Reactions"]

_PLATFORM = str(Platform.DISCORD)

_log = structlog.get_logger(__name__)


class Reactions(GatewaySessions):
    """The reaction votes of `DiscordAdapter`."""

    _pacing: DiscordPacing
    _read_timeout_s: float
    _answers: OrderedDict[str, str]  # reacted message → run ("": not ours)
    _reacting: dict[tuple[str, str], asyncio.Task[None]]  # (message, user) → the last one

    def _on_reaction(self, payload: dict[str, Any]) -> None:
        """A 👍/👎 put on or taken off a message by someone other than a bot: maybe a vote on an
        answer of ours. Any other reaction (a super reaction too), or one on a message known not
        to be ours, costs nothing more. One person's reactions on one message are handled in the
        order Discord sent them, so the later one is the vote that stands."""
        if self._stopped or payload["burst"] or not reaction_value(payload["emoji"]):
            return
        me, message_id, user_id = self._identity().id, payload["message_id"], payload["user_id"]
        if user_id == me or ((payload.get("member") or {}).get("user") or {}).get("bot"):
            return
        author = payload.get("message_author_id")  # Discord names it on an add only
        if author and author != me:
            remember(self._answers, message_id, "")
            return
        if self._answers.get(message_id) == "":
            return
        key = (message_id, user_id)
        task = self._take_in(self._handle_reaction(payload, after=self._reacting.get(key)))
        self._reacting[key] = task
        task.add_done_callback(functools.partial(self._reacted, key))

    def _reacted(self, key: tuple[str, str], task: asyncio.Task[None]) -> None:
        if self._reacting.get(key) is task:
            del self._reacting[key]

    async def _handle_reaction(
        self, payload: dict[str, Any], *, after: asyncio.Task[None] | None
    ) -> None:
        """A 👍/👎 on one of our answers as the reacting person's vote, delivered as a press on
        its button is (whoever sees the answer may rate it, one vote each): putting one on casts
        it, replacing an earlier one; taking one off leaves the other standing when they still
        have it on the answer, and withdraws the vote when not."""
        if after is not None:
            await asyncio.wait([after])
        channel_id, message_id, user_id = (
            payload["channel_id"],
            payload["message_id"],
            payload["user_id"],
        )
        structlog.contextvars.bind_contextvars(
            platform=_PLATFORM, chat_id=channel_id, event_id=message_id
        )
        run_id = await self._answer_run(channel_id, message_id)
        if not run_id:
            return
        value = reaction_value(payload["emoji"])
        if payload["event"] == "remove":
            other = other_vote_emoji(str(payload["emoji"]["name"]))
            still = await self._still_on(channel_id, message_id, user_id, other)
            if still is None:
                return
            value = reaction_value({"name": other}) if still else ""
        msg = reaction_to_inbound(
            payload, value=value, run_id=run_id, event_id=f"r{secrets.token_hex(8)}"
        )
        _log.info("vote.reacted", value=value or "withdrawn")
        await deliver_until_taken(self._deliver, msg, stopping=lambda: self._stopped)

    async def _answer_run(self, channel_id: str, message_id: str) -> str:
        """The run the reacted message answered, from its own 👍/👎 buttons (read once, then
        remembered); "" for a message that is not a final answer of ours."""
        known = self._answers.get(message_id)
        if known is not None:
            return known
        await self._pacing.read()
        try:
            async with asyncio.timeout(self._read_timeout_s), translated("read reacted message"):
                data = await self._client.http.get_message(channel_id, message_id)
        except (PlatformError, TimeoutError) as exc:
            _log.warning("discord.reacted_message_unread", code=getattr(exc, "code", "timeout"))
            return ""
        me = self._identity().id
        run = vote_run(data, me)
        if run or str((data.get("author") or {}).get("id") or "") != me:
            remember(self._answers, message_id, run)  # ours without buttons may yet get them
        return run

    async def _still_on(
        self, channel_id: str, message_id: str, user_id: str, emoji: str
    ) -> bool | None:
        """Whether `user_id` still has the reaction `emoji` on the message (False when Discord
        cannot tell us: the vote is withdrawn); None when they are a bot. Discord lists who
        reacted in order of id, so the first one after `user_id - 1` is them if they are there."""
        await self._pacing.read()
        try:
            async with asyncio.timeout(self._read_timeout_s), translated("read reactions"):
                users = await self._client.http.get_reaction_users(
                    channel_id, message_id, emoji, 1, after=int(user_id) - 1
                )
        except (PlatformError, TimeoutError) as exc:
            _log.warning("discord.reactions_unread", code=getattr(exc, "code", "timeout"))
            return False
        them = [u for u in users if str(u.get("id")) == user_id]
        if not them:
            return False
        return None if them[0].get("bot") else True
