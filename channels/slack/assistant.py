"""Slack's AI-app surfaces: suggested prompts, the working status, the thread title.

Slack shows an AI app in its own pane. Older apps get assistant threads (`assistant_thread_started`
when a user opens one); newer ones the agent view only (`app_home_opened` with `tab: messages`).
On either, the user is greeted with the suggested prompts (`assistant.threads.setSuggestedPrompts`:
`SWITCHBOARD_SLACK_PROMPTS`, up to four). In an assistant thread (a DM thread; Slack refuses the
calls elsewhere, and a refusal is remembered per thread), a message gets the status line
"is thinking…" instead of the 👀 reaction, tools show "Using <tool>…", and Slack clears the status
when the reply is posted; the thread is titled from the first message this process sees in it
(`assistant.threads.setTitle`, once per thread, remembered in a bounded map).

Every call here is cosmetic: a failure is logged and costs nothing else.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from channels.message import ReplyTarget
from switchboard.errors import PlatformError

__all__ = [
    "DEFAULT_GREETING",
    "DEFAULT_PROMPTS",
    "THINKING",
    "AssistantSurfaces",
    "Prompt",
    "thread_title",
]

_log = structlog.get_logger(__name__)

THINKING = "is thinking…"
DEFAULT_GREETING = "Hi! How can I help?"
MAX_PROMPTS = 4  # Slack shows at most four suggested prompts
_TITLE_MAX = 60
_REMEMBERED = 4096

Api = Callable[[Awaitable[AsyncSlackResponse]], Awaitable[AsyncSlackResponse]]


@dataclass(frozen=True, slots=True)
class Prompt:
    """One suggested prompt: `title` on the chip, `message` sent when it is clicked."""

    title: str
    message: str


DEFAULT_PROMPTS = (
    Prompt("Summarise a thread", "Summarise this thread for me"),
    Prompt("Draft a reply", "Help me draft a short, friendly reply"),
    Prompt("Explain something", "Explain this in simple terms:"),
    Prompt("What can you do?", "What can you do?"),
)


def thread_title(text: str) -> str:
    """A title from a message: its first line, at most 60 characters."""
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
    return line if len(line) <= _TITLE_MAX else line[: _TITLE_MAX - 1] + "…"


def is_assistant_candidate(target: ReplyTarget) -> bool:
    """Assistant threads are DM threads (the app's own pane)."""
    return target.chat_id.startswith("D") and bool(target.thread_anchor)


class AssistantSurfaces:
    def __init__(
        self,
        *,
        client: AsyncWebClient,
        api: Api,
        prompts: Sequence[Prompt] = DEFAULT_PROMPTS,
        greeting: str = DEFAULT_GREETING,
    ) -> None:
        self._client = client
        self._api = api
        self._prompts = [{"title": p.title, "message": p.message} for p in prompts[:MAX_PROMPTS]]
        self._greeting = greeting
        self._refused: OrderedDict[str, bool] = OrderedDict()  # threads that are not assistant's
        self._titled: OrderedDict[str, bool] = OrderedDict()  # threads titled by this process

    # -- opening the conversation ----------------------------------------------------------

    async def thread_started(self, event: Mapping[str, Any]) -> None:
        """`assistant_thread_started`: greet the user with the suggested prompts."""
        thread = event.get("assistant_thread") or {}
        channel, thread_ts = str(thread.get("channel_id") or ""), thread.get("thread_ts")
        if channel:
            await self._suggest(channel, str(thread_ts) if thread_ts else None)

    async def home_opened(self, event: Mapping[str, Any]) -> None:
        """`app_home_opened` on the messages tab (the agent view): the same greeting."""
        channel = str(event.get("channel") or "")
        if channel:
            await self._suggest(channel, None)

    async def _suggest(self, channel: str, thread_ts: str | None) -> None:
        if not self._prompts:
            return
        try:
            await self._api(
                self._client.assistant_threads_setSuggestedPrompts(
                    channel_id=channel,
                    thread_ts=thread_ts,
                    title=self._greeting,
                    prompts=self._prompts,
                )
            )
        except PlatformError as exc:
            _log.warning("slack.prompts_failed", code=exc.code)

    # -- while a turn runs -----------------------------------------------------------------

    async def working(self, target: ReplyTarget, line: str) -> bool:
        """Show `line` as the thread's status; False where the thread is not an assistant
        thread (remembered per thread: the app's DM holds assistant threads and ordinary
        threads side by side, so later messages of that thread skip the call)."""
        key = f"{target.chat_id}:{target.thread_anchor}"
        if not is_assistant_candidate(target) or key in self._refused:
            return False
        try:
            await self._api(
                self._client.assistant_threads_setStatus(
                    channel_id=target.chat_id, thread_ts=str(target.thread_anchor), status=line
                )
            )
        except PlatformError as exc:
            _remember(self._refused, key)
            _log.info("slack.status_refused", code=exc.code)
            return False
        return True

    async def title_once(self, target: ReplyTarget, text: str) -> None:
        """Title an assistant thread from its first message (once per thread here)."""
        key = f"{target.chat_id}:{target.thread_anchor}"
        title = thread_title(text)
        if not title or key in self._titled or not is_assistant_candidate(target):
            return
        _remember(self._titled, key)
        try:
            await self._api(
                self._client.assistant_threads_setTitle(
                    channel_id=target.chat_id, thread_ts=str(target.thread_anchor), title=title
                )
            )
        except PlatformError as exc:
            _log.info("slack.title_failed", code=exc.code)


def _remember(store: OrderedDict[str, bool], key: str) -> None:
    store[key] = True
    store.move_to_end(key)
    while len(store) > _REMEMBERED:
        store.popitem(last=False)
