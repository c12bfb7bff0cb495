"""Slack agent sessions: the agent view's working state, title and native Stop button.

An app declared as an agent in Slack's settings shows each thread it works in as a session:
`agents.sessions.setStatus` with `processing` (creating the session, titled from the message
that started it) shows the user Slack's own Stop button, which sends `agent_session_stopped`
(delivered as that person's `/stop` in the thread); the reply sets the session back to
`active`. An app that is not an agent gets a refusal, remembered for the process, so it pays
one failed call and then keeps the assistant status or the 👀 reaction instead. A failure that
can pass (a 429 past slack-sdk's retries, Slack's 5xx, the network) is no refusal: that one
message falls back, the next one tries the session again.

Only sessions this process set working are set back (a bounded map): a fleet whose reply is
sent by another process than the one that saw the message leaves the session working until the
next reply there (Slack's Stop then stops nothing). The working state is set in the background
while the turn runs, so a reply may go in while that call is made: the session is then set
`active` once more after it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from channels.message import InboundMessage, Platform, ReplyTarget
from channels.slack.assistant import thread_title
from switchboard.errors import PlatformError, is_transient

__all__ = ["AgentSessions", "session_stop"]

_log = structlog.get_logger(__name__)
_REMEMBERED = 4096

Api = Callable[[Awaitable[AsyncSlackResponse]], Awaitable[AsyncSlackResponse]]


class AgentSessions:
    def __init__(self, *, client: AsyncWebClient, api: Api) -> None:
        self._client = client
        self._api = api
        self._refused = False  # not an agent app: no session calls from this process
        self._working: OrderedDict[str, object] = OrderedDict()  # threads set `processing` here

    async def working(self, msg: InboundMessage) -> bool:
        """The message's thread as a session in `processing` (Slack's Stop button shows);
        False where sessions are refused (not an agent app) or there is no thread."""
        target = msg.target
        if self._refused or not target.thread_anchor:
            return False
        key, mark = _key(target), object()
        _remember(self._working, key, mark)  # before the call: a reply meanwhile settles it
        try:
            await self._api(
                self._client.agents_sessions_setStatus(
                    channel_id=target.chat_id,
                    thread_ts=str(target.thread_anchor),
                    status="processing",
                    title=thread_title(msg.text) or None,
                    initiator_user_id=msg.sender_id,
                )
            )
        except PlatformError as exc:
            self._working.pop(key, None)
            if is_transient(exc):  # this message falls back; the next one tries again
                _log.warning("slack.session_status_failed", code=exc.code)
            else:
                self._refused = True
                _log.info("slack.sessions_refused", code=exc.code)
            return False
        if self._working.get(key) is not mark:  # the reply went in while this call was made
            await self._active(target)
        return True

    async def settled(self, target: ReplyTarget) -> None:
        """A reply went into the thread: its session is `active` again (no Stop button)."""
        if self._working.pop(_key(target), None) is not None:
            await self._active(target)

    async def _active(self, target: ReplyTarget) -> None:
        try:
            await self._api(
                self._client.agents_sessions_setStatus(
                    channel_id=target.chat_id,
                    thread_ts=str(target.thread_anchor),
                    status="active",
                )
            )
        except PlatformError as exc:
            _log.warning("slack.session_settle_failed", code=exc.code)


def _key(target: ReplyTarget) -> str:
    return f"{target.chat_id}:{target.thread_anchor}"


def _remember(store: OrderedDict[str, Any], key: str, value: Any) -> None:
    store[key] = value
    store.move_to_end(key)
    while len(store) > _REMEMBERED:
        store.popitem(last=False)


def session_stop(body: Mapping[str, Any], team_id: str) -> InboundMessage | None:
    """`agent_session_stopped` (the user pressed Slack's Stop) as their `/stop` in the thread."""
    event = body.get("event") or {}
    user, channel = str(event.get("user") or ""), str(event.get("channel") or "")
    thread_ts = str(event.get("thread_ts") or "")
    if event.get("type") != "agent_session_stopped" or not user or not channel or not thread_ts:
        return None
    event_id = body.get("event_id")
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id=str(body.get("team_id") or team_id),
        chat_id=channel,
        sender_id=user,
        sender_name=user,
        text="/stop",
        provider_message_id=f"stopped:{event.get('event_ts') or event_id}",
        is_dm=channel.startswith("D"),
        thread_anchor=thread_ts,
        event_ids=(str(event_id),) if event_id else (),
    )
