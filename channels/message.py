"""The normalised message every adapter produces, and the conversation key derived from it.

Adapters build an `InboundMessage` from a platform event (pure functions, tested on payload dicts);
the manager never looks at `raw`, and `raw` never leaves the process that received the event: what
a worker needs of a platform's payload travels as typed fields (`DiscordHandle`). Conversation keys follow the table below and are strings the
channel layer owns: `conversation_key()` makes one, `parse_conversation_key()` undoes it.

| platform / place         | key                                          | thread_anchor         |
|--------------------------|----------------------------------------------|-----------------------|
| Telegram private chat    | `tg:<chat>`                                  | None                  |
| Telegram group           | `tg:<chat>:m<root message id>`               | root message id       |
| Telegram forum topic     | `tg:<chat>:t<topic id>`                      | topic id (+ is_topic) |
| Slack channel            | `slack:<team>:<channel>:<thread_ts>`         | thread_ts             |
| Slack DM                 | `slack:<team>:<channel>` or with thread_ts   | thread_ts or None     |
| Discord guild thread     | `discord:<guild>:<thread channel id>`        | None                  |
| Discord DM               | `discord:dm:<channel>`                       | None                  |
| console                  | `console:<session>`                          | None                  |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from switchboard.conversation import ContextMessage

__all__ = [
    "Attachment",
    "ButtonPress",
    "ConversationRef",
    "DiscordHandle",
    "InboundMessage",
    "NativeCommand",
    "Platform",
    "ReplyTarget",
    "Vote",
    "conversation_key",
    "parse_conversation_key",
]


class Platform(StrEnum):
    TELEGRAM = "telegram"
    SLACK = "slack"
    DISCORD = "discord"
    CONSOLE = "console"


_KEY_PREFIX = {
    Platform.TELEGRAM: "tg",
    Platform.SLACK: "slack",
    Platform.DISCORD: "discord",
    Platform.CONSOLE: "console",
}
_PREFIX_PLATFORM = {v: k for k, v in _KEY_PREFIX.items()}


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file on the platform, by reference: the inbox and thread queues carry this, never the
    bytes (the worker fetches them at turn time through the adapter's `FetchesFiles`). Plain
    strings and ints only, so the codec round-trips it as JSON."""

    kind: str  # "image", "file", "audio", "video", "sticker", ...
    name: str = ""
    url: str = ""  # Slack url_private, Discord CDN url ("" on Telegram: see file_id)
    size: int = 0  # bytes as the platform reported them; 0 = unknown
    mime: str = ""  # the platform's claim; the agent sniffs the bytes and trusts those
    file_id: str = ""  # Telegram's file_id, resolved with getFile


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A press on a clarification button: which question, which option."""

    question_id: str
    option_index: int
    interaction_id: str = ""  # platform handle needed to answer the press (callback query id, ...)


@dataclass(frozen=True, slots=True)
class Vote:
    """A 👍/👎 on a bot answer: a feedback button, which carries the answer's run id, or a
    reaction, which names the message (the manager finds its run and asker)."""

    value: str  # "up", "down", or "" when a reaction was taken back
    run_id: str = ""
    message_id: str = ""  # the bot message voted on
    interaction_id: str = ""  # the press or update that carried it (each one is new)


@dataclass(frozen=True, slots=True)
class NativeCommand:
    """A command the platform delivered as one (a Discord application command, a Slack slash
    command) rather than as text, with what any worker needs to answer it: the answer goes
    back through the platform's own channel for it, so a deferred Discord interaction is
    resolved and private answers are ephemeral. The handles are bearer secrets: never logged."""

    name: str  # as invoked, without the slash (`stop`, or an unknown word)
    private: bool = False  # decided on arrival from the registry (a Discord defer fixes it)
    place: str = ""  # `channels.commands.Place` where it was used: dm, group or thread
    response_url: str = field(default="", repr=False)  # Slack: 30 minutes, 5 answers
    application_id: str = ""  # Discord: with the interaction token, the follow-up webhook
    token: str = field(default="", repr=False)  # Discord interaction token: 15 minutes


@dataclass(frozen=True, slots=True)
class DiscordHandle:
    """What a Discord worker needs of an event's payload to answer it, and nothing more: the
    inbox holds this instead of the payload (half an entry's size, and no bearer token beyond the
    press it answers). The token is a bearer secret: never logged."""

    channel_id: str = ""  # where the message itself lives (a thread starter stays in the parent)
    application_id: str = ""  # with the token, a button press's follow-up webhook
    token: str = field(default="", repr=False)  # a button press's interaction token: 15 minutes
    permissions: str = "0"  # the member's permissions Discord sent with a slash command


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    """Where a reply goes: bound on arrival, like slack-bolt's `say`."""

    platform: Platform
    chat_id: str
    thread_anchor: str | None = None  # Slack thread_ts, Telegram topic id, ...
    reply_to_id: str | None = None  # the user's message to reply to, where the platform threads so
    is_topic: bool = False  # Telegram forum topic: thread_anchor is message_thread_id
    workspace_id: str = ""
    recipient_id: str = ""  # who the reply is for (Slack's streaming API wants it in channels)


@dataclass(frozen=True, slots=True)
class InboundMessage:
    platform: Platform
    workspace_id: str  # Slack team, Discord guild, Telegram group chat id; "" for DMs
    chat_id: str
    sender_id: str
    sender_name: str
    text: str  # bot mention stripped
    provider_message_id: str
    is_dm: bool = False
    mentions_bot: bool = False
    thread_anchor: str | None = None
    is_topic: bool = False
    reply_to_id: str | None = None  # provider id of the message this one replies to
    reply_to_bot: bool = False
    attachments: tuple[Attachment, ...] = ()
    event_ids: tuple[str, ...] = ()  # extra dedupe ids, e.g. Telegram update_id, Slack event_id
    button: ButtonPress | None = None
    native: NativeCommand | None = None  # text is then the command as `/name args`
    sent_at: float = 0.0  # when the platform says it was sent (epoch seconds; 0 = not known)
    quoted: tuple[ContextMessage, ...] = ()  # what it replies to, as the event carried it
    observed: bool = False  # not addressed to the bot: only recorded as context, never answered
    vote: Vote | None = None  # a rating of an answer, not words for the agent
    sender_roles: tuple[str, ...] = ()  # the sender's Discord role ids (bindings match them)
    open_place: bool = False  # not addressed, but its place answers without (require_mention)
    parent_id: str = ""  # Discord: the channel a thread belongs to (bindings match it as channel)
    handle: DiscordHandle | None = None  # what a worker reads again of the platform payload
    raw: Any = field(default=None, compare=False, repr=False)

    @property
    def target(self) -> ReplyTarget:
        return ReplyTarget(
            platform=self.platform,
            chat_id=self.chat_id,
            thread_anchor=self.thread_anchor,
            reply_to_id=None if self.is_dm else self.provider_message_id,
            is_topic=self.is_topic,
            workspace_id=self.workspace_id,
            recipient_id=self.sender_id,
        )

    @property
    def dedupe_ids(self) -> tuple[str, ...]:
        """Ids that identify this delivery; any one already seen means it is a redelivery."""
        base = f"{self.chat_id}:{self.provider_message_id}"
        if self.button is not None:
            base = f"press:{self.button.interaction_id or base}"
        if self.vote is not None:
            base = f"vote:{self.vote.interaction_id or base}"
        return (base, *self.event_ids)


@dataclass(frozen=True, slots=True)
class ConversationRef:
    """A parsed conversation key."""

    platform: Platform
    parts: tuple[str, ...]


def conversation_key(msg: InboundMessage) -> str:
    """The conversation this message belongs to (the module docstring's table)."""
    p = msg.platform
    if p is Platform.TELEGRAM:
        if msg.is_dm:
            return f"tg:{msg.chat_id}"
        if msg.is_topic and msg.thread_anchor:
            return f"tg:{msg.chat_id}:t{msg.thread_anchor}"
        return f"tg:{msg.chat_id}:m{msg.thread_anchor or msg.provider_message_id}"
    if p is Platform.SLACK:
        base = f"slack:{msg.workspace_id}:{msg.chat_id}"
        if msg.is_dm and not msg.thread_anchor:
            return base
        return f"{base}:{msg.thread_anchor or msg.provider_message_id}"
    if p is Platform.DISCORD:
        if msg.is_dm:
            return f"discord:dm:{msg.chat_id}"
        return f"discord:{msg.workspace_id}:{msg.chat_id}"
    return f"console:{msg.chat_id}"


def parse_conversation_key(key: str) -> ConversationRef:
    """Undo `conversation_key`; raises ValueError for a key no adapter makes."""
    prefix, _, rest = key.partition(":")
    platform = _PREFIX_PLATFORM.get(prefix)
    if platform is None or not rest:
        raise ValueError(f"not a conversation key: {key!r}")
    return ConversationRef(platform, tuple(rest.split(":")))
