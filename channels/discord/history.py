"""Reading a Discord conversation for context (`ReadsHistory`), through discord.py's HTTP client
(the REST calls behind `Messageable.history` and `fetch_message`, as payload dicts, so one pure
converter, `events.to_context`, serves them and the gateway's `referenced_message` alike).

- A reply: the message it answers came with the event (`InboundMessage.quoted`); the chain
  above it is followed with `GET /channels/{id}/messages/{id}`, at most `_MAX_CHAIN` steps.
- The place the trigger was posted (`msg.handle.channel_id`: the channel before the thread the bot
  made for a mention, or the thread itself): its newest messages before the trigger
  (`GET /channels/{id}/messages?before=`), newer than the catch-up mark when there is one
  (Discord takes one of `before` / `after`, so the mark is applied here, as discord.py does).
- Names: the guild member's nickname (`GET /guilds/{id}/members/{id}`, once an hour per person,
  `channels.names.Names`, at most `_MAX_LOOKUPS` a read), else the account's display name.

Every call books the bot's request window (`DiscordPacing.read`); discord.py waits out short
429s itself, and a read that takes longer than the adapter allows is abandoned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import discord

from channels.adapter import HistoryRequest
from channels.discord.errors import translated
from channels.discord.events import BotIdentity, to_context
from channels.discord.pacing import DiscordPacing
from channels.names import Names
from switchboard.conversation import ContextMessage, message_order
from switchboard.errors import PlatformError

__all__ = ["DiscordHistory"]

_MAX_CHAIN = 5  # replies above the replied-to message that are followed
_MAX_LOOKUPS = 10
_PAGE = 100  # Discord's largest page


class DiscordHistory:
    def __init__(
        self, *, client: discord.Client, pacing: DiscordPacing, me: BotIdentity, names: Names
    ) -> None:
        self._http = client.http
        self._pacing = pacing
        self._me = me
        self._names = names

    async def read(self, request: HistoryRequest) -> list[ContextMessage]:
        msg = request.msg
        home = (
            msg.handle.channel_id
            if msg.handle is not None and msg.handle.channel_id
            else msg.chat_id
        )
        trigger = msg.provider_message_id
        found = await self._before(home, trigger, request.after, request.limit)
        chain = await self._chain(home, msg.quoted, request.limit)
        payloads = [*chain, *found]
        names = await self._lookup(msg.workspace_id, (_author(p) for p in payloads))
        out = [to_context(p, self._me, replied_to=True, names=names) for p in chain]
        out.extend(to_context(p, self._me, names=names) for p in found)
        return out  # the quoted message itself the manager has from the event

    async def _before(
        self, channel: str, trigger: str, after: str | None, limit: int
    ) -> list[Mapping[str, Any]]:
        await self._pacing.read()
        async with translated("read history"):
            data = await self._http.logs_from(channel, min(limit, _PAGE), before=trigger)
        since = message_order(after) if after is not None else None
        return [
            m
            for m in data or ()
            if isinstance(m, Mapping)
            and (since is None or message_order(str(m.get("id") or "")) > since)
        ]

    async def _chain(
        self, channel: str, quoted: tuple[ContextMessage, ...], limit: int
    ) -> list[Mapping[str, Any]]:
        """The replied-to message's own replies upward, as payloads (the first one was quoted
        in the event, so it is read again only when its own reference must be followed)."""
        if not quoted:
            return []
        chain: list[Mapping[str, Any]] = []
        following = quoted[-1].reply_to_id
        while following and len(chain) < min(_MAX_CHAIN, limit):
            await self._pacing.read()
            try:
                async with translated("read replied message"):
                    data = await self._http.get_message(channel, following)
            except PlatformError as exc:
                if exc.code in (10008, 404, 403, 50001, 50013):  # deleted, or out of sight
                    break
                raise
            chain.append(data)
            reference: Mapping[str, Any] = data.get("message_reference") or {}
            following = str(reference.get("message_id") or "") if data.get("type") == 19 else ""
        return chain

    async def _lookup(self, guild: str, users: Iterable[str]) -> dict[str, str]:
        if not guild:
            return {}
        users = dict.fromkeys(u for u in users if u)
        return await self._names.lookup(
            guild, users, lambda user: self._member(guild, user), most=_MAX_LOOKUPS
        )

    async def _member(self, guild: str, user: str) -> str | None:
        await self._pacing.read()
        try:
            async with translated("fetch member"):
                data = await self._http.get_member(guild, user)
        except PlatformError:
            return None  # left the guild, or no permission: the account's name stands in
        account = data.get("user") or {}
        name = str(data.get("nick") or account.get("global_name") or account.get("username") or "")
        return name or None


def _author(payload: Mapping[str, Any]) -> str:
    return str((payload.get("author") or {}).get("id") or "")
