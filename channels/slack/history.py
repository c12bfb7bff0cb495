"""Reading a Slack conversation for context (`ReadsHistory`): a thread's replies, or the channel
before a top-level mention, with every author's display name.

- Inside a thread: `conversations.replies` up to the trigger (`latest`, exclusive), from the
  catch-up mark when there is one (`oldest`, exclusive). Slack pages a thread from its oldest
  message, so a long thread is paged (at most `_MAX_PAGES`) keeping the parent and the newest.
- A mention at the top of a channel (the bot's thread starts at it): `conversations.history`
  before it, newest first; on catch-up there is nothing before the thread's own first message.
- Names: `users.info` once per person (`channels.names.Names`, an hour), for authors and for the
  people `<@U…>` mentions name; a lookup that fails or finds no budget leaves the user id.
- Text: Slack's markup made readable (`<@U1>` → `@Ann`, `<#C1|general>` → `#general`,
  `<!here>` → `@here`, `<url|label>` → `label (url)`, `&lt;` → `<`); the agent's block then makes
  the broadcast words inert.

Budget: every page books the workspace's read window (`SlackPacing.read`) only if it has room
at once, and a 429 is never retried here (the read client has no rate-limit retry): it holds the
window for Slack's `Retry-After` (apps outside the Marketplace get one read a minute) and fails
the read, so the turn goes on without context rather than waiting a minute.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from channels.adapter import HistoryRequest
from channels.names import Names
from channels.slack.events import BotIdentity
from channels.slack.pacing import SlackPacing
from switchboard.conversation import ContextMessage, message_order
from switchboard.errors import PlatformError, PlatformRateLimited

__all__ = ["SlackHistory", "readable_text"]

Call = Callable[[Awaitable[AsyncSlackResponse]], Awaitable[AsyncSlackResponse]]

_MAX_PAGES = 3
_PAGE = 200  # Slack's own cap is lower for some apps (15); it then pages sooner
_MAX_LOOKUPS = 25  # users.info calls one read may make; more people keep their ids
_KEPT_SUBTYPES = frozenset({"file_share", "thread_broadcast", "bot_message", "me_message"})
_MARKUP = re.compile(r"<([^<>]*)>")
_PLATFORM = "slack"


def readable_text(text: str, names: Mapping[str, str]) -> str:
    """Slack's message markup as a person reads it in the client."""

    def one(match: re.Match[str]) -> str:
        inner = match.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            user = target[1:]
            return "@" + (names.get(user) or label or user)
        if target.startswith("#"):
            return "#" + (label or target[1:])
        if target.startswith("!"):
            word = target[1:]
            if word in ("here", "channel", "everyone"):
                return "@" + word
            if word.startswith("subteam^"):
                return label or "@group"
            return label or word.split("^", 1)[0]
        if target.startswith("mailto:"):
            return label or target[len("mailto:") :]
        return f"{label} ({target})" if label and label != target else target

    text = _MARKUP.sub(one, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _mentioned(text: str) -> list[str]:
    return [
        m.group(1)[1:].partition("|")[0] for m in _MARKUP.finditer(text) if m.group(1)[:1] == "@"
    ]


class SlackHistory:
    def __init__(
        self,
        *,
        client: AsyncWebClient,
        call: Call,
        pacing: SlackPacing,
        me: BotIdentity,
        names: Names,
    ) -> None:
        self._client = client  # the read client: no rate-limit retry (see the module docstring)
        self._call = call
        self._pacing = pacing
        self._me = me
        self._names = names

    async def read(self, request: HistoryRequest) -> list[ContextMessage]:
        msg = request.msg
        workspace = msg.workspace_id
        trigger = msg.provider_message_id
        thread = msg.thread_anchor
        if thread and thread != trigger:
            raw = await self._replies(
                workspace, msg.chat_id, thread, trigger, request.after, request.limit
            )
        elif request.after is None:
            raw = await self._channel(msg.chat_id, trigger, request.limit, workspace)
        else:
            return []
        usable = [m for m in raw if _usable(m)]
        people = {str(m["user"]) for m in usable if m.get("user")}
        for m in usable:
            people.update(_mentioned(str(m.get("text") or "")))
        if self._me.user_id and self._me.name:
            people.discard(self._me.user_id)
        names = await self._names.lookup(
            workspace, people, lambda user: self._user(user, workspace), most=_MAX_LOOKUPS
        )
        if self._me.user_id and self._me.name:
            names[self._me.user_id] = self._me.name
        return [self._context(m, names) for m in usable]

    async def _page(
        self, workspace: str, make: Callable[[], Awaitable[AsyncSlackResponse]]
    ) -> AsyncSlackResponse:
        if not await self._pacing.read(workspace):
            raise PlatformRateLimited(
                "slack history: read budget spent", platform=_PLATFORM, retry_after=0, code="budget"
            )
        try:
            return await self._call(make())
        except PlatformRateLimited as exc:
            await self._pacing.hold_reads(workspace, exc.retry_after)
            raise

    async def _channel(
        self, channel: str, before: str, limit: int, workspace: str
    ) -> list[Mapping[str, Any]]:
        resp = await self._page(
            workspace,
            lambda: self._client.conversations_history(
                channel=channel, latest=before, inclusive=False, limit=limit
            ),
        )
        return [m for m in resp.get("messages") or () if isinstance(m, Mapping)]

    async def _replies(
        self, workspace: str, channel: str, thread: str, before: str, after: str | None, limit: int
    ) -> list[Mapping[str, Any]]:
        """The thread's parent (unless catching up) and its newest `limit` replies in range."""
        parent: Mapping[str, Any] | None = None
        newest: list[Mapping[str, Any]] = []
        cursor: str | None = None
        for page in range(_MAX_PAGES):
            try:
                resp = await self._page(
                    workspace,
                    functools.partial(
                        self._client.conversations_replies,
                        channel=channel,
                        ts=thread,
                        latest=before,
                        oldest=after,
                        inclusive=False,
                        limit=min(_PAGE, limit + 1),
                        cursor=cursor,
                    ),
                )
            except PlatformRateLimited:
                if page == 0:
                    raise
                break  # what the earlier pages gave still serves
            found = [m for m in resp.get("messages") or () if isinstance(m, Mapping)]
            for m in found:
                if str(m.get("ts")) == thread:
                    parent = m
                else:
                    newest.append(m)
            newest = newest[-limit:]
            cursor = str((resp.get("response_metadata") or {}).get("next_cursor") or "")
            if not resp.get("has_more") or not cursor:
                break
        return [parent, *newest] if parent is not None else newest

    async def _user(self, user: str, workspace: str) -> str | None:
        if not await self._pacing.lookup(workspace):
            return None
        try:
            resp = await self._call(self._client.users_info(user=user))
        except PlatformError:
            return None  # no users:read, a deleted user: the id stands in
        data = resp.get("user") or {}
        profile = data.get("profile") or {}
        name = str(
            profile.get("display_name")
            or profile.get("real_name")
            or data.get("real_name")
            or data.get("name")
            or ""
        ).strip()
        return name or None

    def _context(self, m: Mapping[str, Any], names: Mapping[str, str]) -> ContextMessage:
        user = str(m.get("user") or "")
        bot = m.get("bot_profile") or {}
        sender = names.get(user) or (user or str(bot.get("name") or m.get("username") or "a bot"))
        ts = str(m.get("ts") or "")
        return ContextMessage(
            message_id=ts,
            sender=sender,
            sent_at=float(message_order(ts)[0]),
            text=readable_text(str(m.get("text") or ""), names),
            attachments=tuple(
                str(f.get("name") or f.get("title") or "file")
                for f in m.get("files") or ()
                if isinstance(f, Mapping)
            ),
            is_self=bool(
                (self._me.user_id and user == self._me.user_id)
                or (self._me.bot_id and m.get("bot_id") == self._me.bot_id)
            ),
        )


def _usable(m: Mapping[str, Any]) -> bool:
    """A person's (or a bot's) words: joins, topic changes and other events are left out."""
    subtype = m.get("subtype")
    if subtype is not None and subtype not in _KEPT_SUBTYPES:
        return False
    return bool(m.get("ts")) and bool(m.get("text") or m.get("files"))
