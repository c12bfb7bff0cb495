"""One harness per platform for the adapter contract suite: the same questions, four answers.

Each harness starts its platform's fake (or, for the console, in-memory stdin/stdout), builds the
real adapter against it, and lets the contract read back what the platform received. A harness
is the only place that knows a platform: the contract itself sees the `Adapter` Protocol, its
`Capabilities` and this interface.

- `dm()` / `group()`: a user writes to the bot (in a DM / in a group, mentioning it); the message
  travels through the real SDK and the adapter's `deliver`, and the delivered `InboundMessage` is
  returned. Its `target` is the conversation (a group's thread, chain or Slack thread).
- `received(target)`: the bot's messages in that conversation, oldest first, as they read now
  (after edits), with their platform ids where the platform has them.
- `buttons`, `reactions`, `typing_signals`, `private_notices`: what users can see besides text.
- `adapter_tasks()`: live tasks created since just before the adapter started, other than the
  fake server's own request handlers.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp

from channels.adapter import Adapter
from channels.console import ConsoleAdapter
from channels.discord import DiscordAdapter
from channels.message import InboundMessage, ReplyTarget
from channels.slack import SlackAdapter
from channels.telegram import TelegramAdapter
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

__all__ = ["HARNESSES", "PLATFORMS", "Harness", "Received"]

PLATFORMS = ("telegram", "slack", "discord", "console")
_AIOHTTP_SERVER = str(Path(aiohttp.__file__).parent / "web_")  # aiohttp's server-side modules


@dataclass(frozen=True, slots=True)
class Received:
    """One bot message as the platform shows it; `message_id` is None where a platform has no
    message ids (the console)."""

    message_id: str | None
    text: str


class Harness(Protocol):
    adapter: Adapter
    platform_limit: int | None  # what the platform accepts per message, in the adapter's len_unit
    has_groups: bool  # whether other people can read a group conversation

    async def start(self) -> None: ...
    async def close(self) -> None: ...
    async def dm(self) -> InboundMessage: ...
    async def group(self) -> InboundMessage: ...
    def received(self, target: ReplyTarget) -> list[Received]: ...
    def buttons(self, target: ReplyTarget, message_id: str) -> list[str]: ...
    def reactions(self, msg: InboundMessage) -> list[str]: ...
    def typing_signals(self, target: ReplyTarget) -> int | None: ...
    def private_notices(self, msg: InboundMessage) -> list[str]: ...
    def adapter_tasks(self) -> set[asyncio.Task[Any]]: ...


class _Base:
    """Delivery capture and task bookkeeping shared by the four harnesses."""

    def __init__(self) -> None:
        self.inbox: list[InboundMessage] = []
        self._before: set[asyncio.Task[Any]] = set()

    async def deliver(self, msg: InboundMessage) -> None:
        self.inbox.append(msg)

    def snapshot_tasks(self) -> None:
        self._before = asyncio.all_tasks()

    def adapter_tasks(self) -> set[asyncio.Task[Any]]:
        current = asyncio.current_task()
        return {
            task
            for task in asyncio.all_tasks() - self._before
            if task is not current and not task.done() and not _serves_fake(task)
        }

    async def delivered(self, match: Callable[[InboundMessage], bool]) -> InboundMessage:
        return await wait_until(lambda: next((m for m in self.inbox if match(m)), None))


def _serves_fake(task: asyncio.Task[Any]) -> bool:
    """A fake server's connection or request handler (aiohttp server side), not the adapter's."""
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and code.co_filename.startswith(_AIOHTTP_SERVER)


# -- Telegram ----------------------------------------------------------------------------------


class TelegramHarness(_Base):
    platform_limit = 4096  # the fake rejects longer visible text with "message is too long"
    has_groups = True
    _ANN = FakeTelegram.user(7, "Ann")
    _GROUP_ID = -100777

    async def start(self) -> None:
        self.fake = FakeTelegram()
        await self.fake.start()
        self.snapshot_tasks()
        self.adapter = TelegramAdapter(
            token=TOKEN, deliver=self.deliver, api_base=self.fake.base_url
        )
        await self.adapter.start()

    async def close(self) -> None:
        await self.adapter.stop()
        await self.fake.stop()

    async def dm(self) -> InboundMessage:
        return await self._say(self.fake.dm(self._ANN), "hello")

    async def group(self) -> InboundMessage:
        self.fake.say(self.fake.dm(self._ANN), self._ANN, "/start", push=False)  # DM is open
        group = self.fake.group(self._GROUP_ID)
        return await self._say(group, f"@{self.fake.username} hello")

    async def _say(self, chat: dict[str, Any], text: str) -> InboundMessage:
        sent = self.fake.say(chat, self._ANN, text)["message"]
        return await self.delivered(
            lambda m: (
                (m.chat_id, m.provider_message_id) == (str(chat["id"]), str(sent["message_id"]))
            )
        )

    def received(self, target: ReplyTarget) -> list[Received]:
        return [
            Received(str(m["message_id"]), m["text"])
            for m in self.fake.bot_messages(int(target.chat_id))
        ]

    def buttons(self, target: ReplyTarget, message_id: str) -> list[str]:
        message = self.fake.messages[(int(target.chat_id), int(message_id))]
        rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
        return [button["text"] for row in rows for button in row]

    def reactions(self, msg: InboundMessage) -> list[str]:
        return [
            reaction["emoji"]
            for call in self.fake.calls_to("setMessageReaction", ok_only=True)
            if (call["chat_id"], call["message_id"])
            == (int(msg.chat_id), int(msg.provider_message_id))
            for reaction in call["reaction"]
        ]

    def typing_signals(self, target: ReplyTarget) -> int | None:
        calls = self.fake.calls_to("sendChatAction", ok_only=True)
        return sum(1 for c in calls if c["chat_id"] == int(target.chat_id))

    def private_notices(self, msg: InboundMessage) -> list[str]:
        return self.fake.bot_texts(int(msg.sender_id))  # a user's private chat has the user's id


# -- Slack -------------------------------------------------------------------------------------


class SlackHarness(_Base):
    platform_limit = 40_000  # chat.postMessage refuses longer text (msg_too_long)
    has_groups = True
    _USER = "U1"

    async def start(self) -> None:
        self.fake = FakeSlack()
        await self.fake.start()
        self.fake.add_user(self._USER, "alice")
        self.snapshot_tasks()
        self.adapter = SlackAdapter(
            bot_token=self.fake.bot_token,
            app_token=self.fake.app_token,
            deliver=self.deliver,
            api_base=self.fake.api_base,
        )
        await self.adapter.start()
        await wait_until(lambda: self.fake.socket_connected)

    async def close(self) -> None:
        await self.adapter.stop()
        await self.fake.stop()

    async def dm(self) -> InboundMessage:
        return await self._push(
            {"type": "message", "channel": "D1", "channel_type": "im", "text": "hello"}
        )

    async def group(self) -> InboundMessage:
        return await self._push({"type": "app_mention", "channel": "C1", "text": "<@UBOT> hello"})

    async def _push(self, event: dict[str, Any]) -> InboundMessage:
        ts = self.fake.next_ts()
        event = {**event, "user": self._USER, "ts": ts, "team": self.fake.team_id}
        await self.fake.wait_ack(await self.fake.push_event(event))
        return await self.delivered(lambda m: m.provider_message_id == ts)

    def _messages(self, channel: str) -> dict[str, dict[str, Any]]:
        """The bot's messages in a channel by ts, replaying posts and updates in call order."""
        messages: dict[str, dict[str, Any]] = {}
        for call in self.fake.calls:
            params = call.params
            if call.status != 200 or params.get("channel") != channel:
                continue
            if call.method == "chat.postMessage" and call.response.get("ok"):
                messages[call.response["ts"]] = {
                    "text": params.get("text", ""),
                    "blocks": params.get("blocks") or [],
                    "thread_ts": params.get("thread_ts"),
                }
            elif call.method == "chat.update" and params.get("ts") in messages:
                message = messages[params["ts"]]
                message["text"] = params.get("text", message["text"])
                if "blocks" in params:
                    message["blocks"] = params["blocks"] or []
        return messages

    def received(self, target: ReplyTarget) -> list[Received]:
        return [
            Received(ts, m["text"])
            for ts, m in self._messages(target.chat_id).items()
            if m["thread_ts"] == target.thread_anchor
        ]

    def buttons(self, target: ReplyTarget, message_id: str) -> list[str]:
        blocks = self._messages(target.chat_id)[message_id]["blocks"]
        return [
            element["text"]["text"]
            for block in blocks
            if block.get("type") == "actions"
            for element in block["elements"]
            if element.get("type") == "button"
        ]

    def reactions(self, msg: InboundMessage) -> list[str]:
        return [
            str(call.params["name"])
            for call in self.fake.calls_to("reactions.add")
            if (call.params.get("channel"), call.params.get("timestamp"))
            == (msg.chat_id, msg.provider_message_id)
        ]

    def typing_signals(self, target: ReplyTarget) -> int | None:
        return None  # Slack has no typing indicator for bots

    def private_notices(self, msg: InboundMessage) -> list[str]:
        return [
            str(call.params["text"])
            for call in self.fake.calls_to("chat.postEphemeral")
            if call.params.get("user") == msg.sender_id
        ]


# -- Discord -----------------------------------------------------------------------------------


class DiscordHarness(_Base):
    platform_limit = 2000  # Discord's message content limit
    has_groups = True

    async def start(self) -> None:
        self.fake = await FakeDiscord().start()
        self.snapshot_tasks()
        self.adapter = DiscordAdapter(
            token=self.fake.token,
            deliver=self.deliver,
            api_base=self.fake.api_base,
            guild_ready_timeout=0.05,
        )
        await self.adapter.start()

    async def close(self) -> None:
        await self.adapter.stop()
        await self.fake.close()

    async def dm(self) -> InboundMessage:
        sent = await self.fake.user_message("hello", dm=True)
        return await self.delivered(lambda m: m.provider_message_id == sent["id"])

    async def group(self) -> InboundMessage:
        sent = await self.fake.user_message(f"<@{self.fake.bot['id']}> hello")
        return await self.delivered(lambda m: m.provider_message_id == sent["id"])

    def received(self, target: ReplyTarget) -> list[Received]:
        return [Received(m["id"], m["content"]) for m in self.fake.bot_messages(target.chat_id)]

    def buttons(self, target: ReplyTarget, message_id: str) -> list[str]:
        rows = self.fake.messages[message_id].get("components") or []
        return [c["label"] for row in rows for c in row.get("components") or [] if c["type"] == 2]

    def reactions(self, msg: InboundMessage) -> list[str]:
        pattern = re.compile(
            rf"/channels/\d+/messages/{msg.provider_message_id}/reactions/([^/]+)/@me"
        )
        return [
            urllib.parse.unquote(match.group(1))
            for call in self.fake.calls
            if call.method == "PUT" and (match := pattern.fullmatch(call.path))
        ]

    def typing_signals(self, target: ReplyTarget) -> int | None:
        return len(self.fake.calls_to("POST", rf"/channels/{target.chat_id}/typing"))

    def private_notices(self, msg: InboundMessage) -> list[str]:
        dm = self.fake.dm_channel(self.fake.users[msg.sender_id])
        direct = [m["content"] for m in self.fake.bot_messages(dm)]
        ephemeral = [f.content for f in self.fake.followups if f.user_id == msg.sender_id]
        return direct + [text for text in ephemeral if text not in direct]


# -- console -----------------------------------------------------------------------------------


class _Screen(io.StringIO):
    """A stdout that also keeps each write, since the console writes one message per call."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


class ConsoleHarness(_Base):
    platform_limit = None  # a terminal takes any length
    has_groups = False  # one operator at one terminal: every conversation is private
    _BOT = "bot> "
    _THINKING = "… thinking\n"

    async def start(self) -> None:
        self.stdin = io.StringIO()
        self.screen = _Screen()
        self.snapshot_tasks()
        self.adapter = ConsoleAdapter(
            deliver=self.deliver,
            session="contract",
            stdin=self.stdin,
            stdout=self.screen,
            spinner=False,
        )
        await self.adapter.start()
        self._lines = itertools.count(1)

    async def close(self) -> None:
        await self.adapter.stop()

    async def dm(self) -> InboundMessage:
        return await self._type(f"hello {next(self._lines)}")

    async def group(self) -> InboundMessage:
        return await self._type(f"hello {next(self._lines)}")  # the console has no groups

    async def _type(self, line: str) -> InboundMessage:
        at = self.stdin.tell()
        self.stdin.write(line + "\n")
        self.stdin.seek(at)
        await self.adapter.run()  # reads the line, delivers it, then stops at end of input
        return await self.delivered(lambda m: m.text == line)

    def received(self, target: ReplyTarget) -> list[Received]:
        return [
            Received(None, w[len(self._BOT) : -1])
            for w in self.screen.writes
            if w.startswith(self._BOT) and w.endswith("\n")
        ]

    def buttons(self, target: ReplyTarget, message_id: str) -> list[str]:
        return []

    def reactions(self, msg: InboundMessage) -> list[str]:
        return []

    def typing_signals(self, target: ReplyTarget) -> int | None:
        return self.screen.writes.count(self._THINKING)

    def private_notices(self, msg: InboundMessage) -> list[str]:
        return [r.text for r in self.received(msg.target)]


HARNESSES: dict[str, Callable[[], Harness]] = {
    "telegram": TelegramHarness,
    "slack": SlackHarness,
    "discord": DiscordHarness,
    "console": ConsoleHarness,
}
