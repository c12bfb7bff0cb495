"""Pure decisions about Telegram updates: is it for the bot, and what `InboundMessage` is it.

No I/O here, so every rule is tested on payload dicts (`tests/unit/channels/test_telegram_*`).
Functions accept either wire-format dicts or aiogram objects; dicts are validated into aiogram
types first, so both go through the same code.

Rules (the table in `channels/message.py`):
- private chat: every human message with text (or a caption), or with a photo, document, voice
  note, audio or video alone, or a checklist (its title and tasks as text); stickers, polls,
  locations are not delivered, and get a short notice; the chat is the conversation;
- group: only a mention of `@botname`, a reply to one of the bot's messages, or a command
  addressed to us (`/cmd@botname`, or a plain `/cmd` we know); `/cmd@OtherBot` is never ours;
  another bot's message only where the group's binding says `allow_bots` (`mentions`: one that
  names us, as Telegram's bot-to-bot mode delivers them), our own never;
- a new group chain is anchored at the mentioning message; a reply to the bot is anchored at the
  bot message it replies to (the manager maps that id to its thread first);
- a forum topic (`is_topic_message`) is one conversation anchored at `message_thread_id`.
  Telegram makes every topic message a "reply" to the topic's creation message; that is not a
  reply to anyone.
- button presses carry `q:<question_id>:<index>` callback data, parsed strictly;
- a reply carries what it replies to as context (`quoted`: `reply_to_message` with the `quote`,
  or an `external_reply` from another chat), and a group message that is not for the bot can be
  passed on only to be recorded as context (`to_observed`; the adapter does so where
  `SWITCHBOARD_TELEGRAM_OBSERVE` is on and Telegram shows the bot every group message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, Checklist, Message, MessageEntity, Update
from pydantic import Field, ValidationError

from channels.bindings import DEFAULT_POLICY, PlacePolicy
from channels.commands import COMMANDS
from channels.message import Attachment, ButtonPress, InboundMessage, Platform
from switchboard.conversation import ContextMessage

__all__ = [
    "KNOWN_COMMANDS",
    "OBSERVED_MAX_CHARS",
    "BotIdentity",
    "QuestionOption",
    "callback_data",
    "is_for_bot",
    "parse_callback_data",
    "to_inbound",
    "to_observed",
    "wants_text_notice",
]

KNOWN_COMMANDS = frozenset({*(str(spec.name) for spec in COMMANDS), "start"})
"""Plain `/cmd` (no `@botname`) in a group is ours only for these: other bots' commands in a
shared group must not start our conversations."""

_GROUP_TYPES = frozenset({"group", "supergroup"})
OBSERVED_MAX_CHARS = 2000  # of an observed message's text: context, not a document
_COMMAND = re.compile(r"/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]+))?")
_MEDIA_KINDS = (
    ("photo", "image"),
    ("document", "file"),
    ("video", "video"),
    ("animation", "video"),
    ("audio", "audio"),
    ("voice", "audio"),
    ("video_note", "video"),
    ("sticker", "sticker"),
)
_READABLE = frozenset({"image", "file", "audio", "video"})
"""Attachment kinds handed to the agent (stickers are not): a message of these alone is delivered."""
_DEFAULT_NAMES = {
    "photo": "photo.jpg",
    "voice": "voice.ogg",
    "video_note": "video_note.mp4",
    "video": "video.mp4",
    "animation": "animation.mp4",
    "audio": "audio",
    "document": "document",
    "sticker": "sticker.webp",
}
_DEFAULT_MIMES = {"photo": "image/jpeg", "voice": "audio/ogg", "video_note": "video/mp4"}
_SERVICE_KINDS = frozenset(
    {
        "new_chat_members", "left_chat_member", "chat_owner_left", "chat_owner_changed",
        "new_chat_title", "new_chat_photo", "delete_chat_photo", "group_chat_created",
        "supergroup_chat_created", "channel_chat_created", "message_auto_delete_timer_changed",
        "migrate_to_chat_id", "migrate_from_chat_id", "pinned_message", "invoice",
        "successful_payment", "refunded_payment", "users_shared", "user_shared", "chat_shared",
        "gift", "unique_gift", "gift_upgrade_sent", "connected_website", "write_access_allowed",
        "passport_data", "proximity_alert_triggered", "boost_added", "chat_background_set",
        "checklist_tasks_done", "checklist_tasks_added", "direct_message_price_changed",
        "forum_topic_created", "forum_topic_edited", "forum_topic_closed", "forum_topic_reopened",
        "general_forum_topic_hidden", "general_forum_topic_unhidden", "giveaway_created",
        "giveaway_completed", "managed_bot_created", "paid_message_price_changed",
        "poll_option_added", "poll_option_deleted", "suggested_post_approved",
        "suggested_post_approval_failed", "suggested_post_declined", "suggested_post_paid",
        "suggested_post_refunded", "video_chat_scheduled", "video_chat_started",
        "video_chat_ended", "video_chat_participants_invited", "web_app_data",
        "community_chat_added", "community_chat_removed", "community_chat_joined",
    }
)  # fmt: skip
"""aiogram's content types that are events, not something a person sent: never answered. Every
other kind a private message can have, and one aiogram does not know (`unknown`), is either read
or answered with the short notice: a list of what *is* content went stale with each Bot API
release (a checklist got silence). A unit test holds this against aiogram's `ContentType`."""


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is, from `getMe`: needed to recognise mentions and replies to it."""

    id: int
    username: str

    def is_me(self, name: str) -> bool:
        return bool(self.username) and name.lstrip("@").lower() == self.username.lower()


class QuestionOption(CallbackData, prefix="q"):
    """A clarification button's payload, `q:<question id>:<option>`: aiogram packs and checks
    it, well inside Telegram's 64-byte limit."""

    question_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,12}$")
    option: int = Field(ge=0, lt=100)


def callback_data(question_id: str, option_index: int) -> str:
    """The button payload for one option."""
    try:
        return QuestionOption(question_id=question_id, option=option_index).pack()
    except ValidationError:
        raise ValueError("question id must be 1-12 url-safe characters, index 0-99") from None


def parse_callback_data(data: str | None) -> tuple[str, int] | None:
    """Undo `callback_data`; anything else (old buttons, forged payloads) is None."""
    if not data:
        return None
    try:
        option = QuestionOption.unpack(data)
    except (TypeError, ValueError):  # wrong prefix or arity; pydantic's errors are ValueErrors
        return None
    return option.question_id, option.option


def is_for_bot(
    message: Message | dict[str, Any], me: BotIdentity, *, policy: PlacePolicy = DEFAULT_POLICY
) -> bool:
    """Whether a message is addressed to the bot (text or not; see `to_inbound` for content).
    Never our own; another bot's only where the place's `policy` takes them (`allow_bots`; by
    default never): Telegram's bot-to-bot mode shows us one that carries `/cmd@us` or replies
    to us, and every one where we are an admin without privacy mode."""
    m = _as_message(message)
    sender = m.from_user
    if sender is None or sender.id == me.id:
        return False
    if sender.is_bot and not policy.takes_bot(mentioned=_addresses_bot(m, me)):
        return False
    command = _command(m)
    if command is not None and command[1] and not me.is_me(command[1]):
        return False
    if m.chat.type == "private":
        return True
    if m.chat.type not in _GROUP_TYPES:
        return False
    if command is not None and (command[1] or command[0].lower() in KNOWN_COMMANDS):
        return True
    return _replied_to_bot(m, me) is not None or bool(_mention_spans(m, me))


def _addresses_bot(m: Message, me: BotIdentity) -> bool:
    """Whether a message names the bot: `/cmd@us`, an @us mention, or a reply to our message."""
    command = _command(m)
    if command is not None and command[1] and me.is_me(command[1]):
        return True
    return _replied_to_bot(m, me) is not None or bool(_mention_spans(m, me))


def wants_text_notice(update: Update | dict[str, Any], me: BotIdentity) -> bool:
    """A private message we cannot read (sticker, media without caption): worth a short notice."""
    u = _as_update(update)
    m = u.message
    if m is None or m.chat.type != "private" or not is_for_bot(m, me):
        return False
    if m.text is not None or m.caption is not None or m.checklist is not None:
        return False
    if any(a.kind in _READABLE for a in _attachments(m)):
        return False  # delivered: the files are the message
    return m.content_type not in _SERVICE_KINDS


def to_inbound(
    update: Update | dict[str, Any],
    me: BotIdentity,
    *,
    open_place: bool = False,
    policy: PlacePolicy = DEFAULT_POLICY,
) -> InboundMessage | None:
    """The normalised message for an update, or None when it is not for the bot. In an
    `open_place` (a group whose binding says `require_mention: false`) a person's message is
    for the bot without a mention; `policy` says which other bots' messages are (`is_for_bot`)."""
    u = _as_update(update)
    if u.message is not None:
        return _from_message(u.message, u.update_id, me, open_place=open_place, policy=policy)
    if u.callback_query is not None:
        return _from_press(u.callback_query, u.update_id)
    return None


def _from_message(
    m: Message,
    update_id: int,
    me: BotIdentity,
    *,
    open_place: bool = False,
    policy: PlacePolicy = DEFAULT_POLICY,
) -> InboundMessage | None:
    addressed = is_for_bot(m, me, policy=policy)
    if not addressed and not (open_place and _person_talking(m, me)):
        return None
    raw_text = m.text if m.text is not None else m.caption
    if raw_text is None and m.checklist is not None:
        raw_text = checklist_text(m.checklist)
    attachments = _attachments(m)
    if raw_text is None:
        if not any(a.kind in _READABLE for a in attachments):
            return None
        raw_text = ""  # a photo, document or voice note alone: the files are the message
    entities = (m.entities if m.text is not None else m.caption_entities) or []
    sender = m.from_user
    assert sender is not None  # is_for_bot checked it
    is_dm = m.chat.type == "private"
    mentions = _mention_spans(m, me)
    text, addressed_command = _clean_text(raw_text, entities, mentions, me)
    replied = _replied_to_bot(m, me)
    reply_to = _real_reply(m)
    topic = bool(m.is_topic_message and m.message_thread_id)
    if is_dm:
        anchor: str | None = None
    elif topic:
        anchor = str(m.message_thread_id)
    elif replied is not None:
        anchor = str(replied)
    else:
        anchor = str(m.message_id)
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id="" if is_dm else str(m.chat.id),
        chat_id=str(m.chat.id),
        sender_id=str(sender.id),
        sender_name=_display_name(sender.first_name, sender.last_name, sender.username),
        text=text,
        provider_message_id=str(m.message_id),
        is_dm=is_dm,
        mentions_bot=bool(mentions) or addressed_command,
        thread_anchor=anchor,
        is_topic=topic,
        reply_to_id=None if reply_to is None else str(reply_to.message_id),
        reply_to_bot=replied is not None,
        attachments=attachments,
        event_ids=(f"u{update_id}",),
        sent_at=m.date.timestamp(),
        quoted=_quoted(m, me),
        open_place=not addressed,
        raw=m,
    )


def checklist_text(checklist: Checklist) -> str:
    """A checklist as the model reads one: its title, then a task per line, done or not."""
    tasks = (
        f"- [{'x' if t.completion_date or t.completed_by_user or t.completed_by_chat else ' '}] {t.text}"
        for t in checklist.tasks
    )
    return "\n".join((f"Checklist: {checklist.title}", *tasks))


def _person_talking(m: Message, me: BotIdentity) -> bool:
    """A person's group message that is no command (a command for another bot least of all)."""
    sender = m.from_user
    if sender is None or sender.is_bot or sender.id == me.id:
        return False
    return m.chat.type in _GROUP_TYPES and _command(m) is None


def to_observed(update: Update | dict[str, Any], me: BotIdentity) -> InboundMessage | None:
    """A group message not addressed to the bot, as a message only to be recorded for later
    turns' context (`observed`); None for anything else (private chats, messages for the bot,
    bots, service messages, commands, messages without words or files)."""
    u = _as_update(update)
    m = u.message
    if m is None or m.chat.type not in _GROUP_TYPES or is_for_bot(m, me):
        return None
    sender = m.from_user
    if sender is None or sender.is_bot:
        return None
    text = m.text if m.text is not None else (m.caption or "")
    attachments = tuple(
        Attachment(kind=a.kind, name=a.name) for a in _attachments(m) if a.kind in _READABLE
    )
    if text.startswith("/") or not (text.strip() or attachments):
        return None
    topic = bool(m.is_topic_message and m.message_thread_id)
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id=str(m.chat.id),
        chat_id=str(m.chat.id),
        sender_id=str(sender.id),
        sender_name=_display_name(sender.first_name, sender.last_name, sender.username),
        text=text[:OBSERVED_MAX_CHARS],
        provider_message_id=str(m.message_id),
        thread_anchor=str(m.message_thread_id) if topic else None,
        is_topic=topic,
        attachments=attachments,
        event_ids=(f"u{u.update_id}",),
        sent_at=m.date.timestamp(),
        observed=True,
    )


def _quoted(m: Message, me: BotIdentity) -> tuple[ContextMessage, ...]:
    """What a message replies to, as the update carries it: the replied message (with the part
    it quotes), or a message from another chat (`external_reply`: its sender, and its words as
    far as the quote gives them)."""
    quote = m.quote.text if m.quote is not None else ""
    reply = _real_reply(m)
    if reply is not None:
        return (
            ContextMessage(
                message_id=str(reply.message_id),
                sender=_sender_name(reply),
                sent_at=reply.date.timestamp(),
                text=reply.text if reply.text is not None else (reply.caption or ""),
                attachments=tuple(a.name or a.kind for a in _attachments(reply)),
                is_self=reply.from_user is not None and reply.from_user.id == me.id,
                replied_to=True,
                quote=quote,
            ),
        )
    external = m.external_reply
    if external is None:
        return ()
    origin = external.origin
    where = external.chat.id if external.chat is not None else "?"
    return (
        ContextMessage(
            message_id=f"ext:{where}:{external.message_id or ''}",
            sender=_origin_name(origin),
            sent_at=origin.date.timestamp(),
            text=quote,
            attachments=tuple(a.name or a.kind for a in _attachments(external)),
            replied_to=True,
        ),
    )


def _sender_name(m: Message) -> str:
    if m.from_user is not None:
        user = m.from_user
        return _display_name(user.first_name, user.last_name, user.username)
    if m.sender_chat is not None:
        return m.sender_chat.title or m.sender_chat.username or "a chat"
    return "someone"


def _origin_name(origin: Any) -> str:
    """Who wrote a message from elsewhere (`MessageOrigin*`: a user, a hidden user, a chat or
    a channel)."""
    user = getattr(origin, "sender_user", None)
    if user is not None:
        return _display_name(user.first_name, user.last_name, user.username)
    chat = getattr(origin, "sender_chat", None) or getattr(origin, "chat", None)
    if chat is not None:
        return chat.title or chat.username or "a chat"
    return str(getattr(origin, "sender_user_name", "") or "someone")


def _from_press(cq: CallbackQuery, update_id: int) -> InboundMessage | None:
    parsed = parse_callback_data(cq.data)
    question = cq.message
    if parsed is None or question is None or cq.from_user.is_bot:
        return None
    chat = question.chat
    is_dm = chat.type == "private"
    topic = isinstance(question, Message) and bool(
        question.is_topic_message and question.message_thread_id
    )
    if is_dm:
        anchor: str | None = None
    elif topic:
        assert isinstance(question, Message)
        anchor = str(question.message_thread_id)
    else:
        anchor = str(question.message_id)
    sender = cq.from_user
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id="" if is_dm else str(chat.id),
        chat_id=str(chat.id),
        sender_id=str(sender.id),
        sender_name=_display_name(sender.first_name, sender.last_name, sender.username),
        text="",
        provider_message_id=str(question.message_id),
        is_dm=is_dm,
        thread_anchor=anchor,
        is_topic=topic,
        reply_to_id=str(question.message_id),
        reply_to_bot=True,
        event_ids=(f"u{update_id}",),
        button=ButtonPress(parsed[0], parsed[1], interaction_id=cq.id),
        raw=cq,
    )


def _as_message(message: Message | dict[str, Any]) -> Message:
    return message if isinstance(message, Message) else Message.model_validate(message)


def _as_update(update: Update | dict[str, Any]) -> Update:
    return update if isinstance(update, Update) else Update.model_validate(update)


def _body(m: Message) -> tuple[str, list[MessageEntity]]:
    if m.text is not None:
        return m.text, list(m.entities or [])
    if m.caption is not None:
        return m.caption, list(m.caption_entities or [])
    return "", []


def _command(m: Message) -> tuple[str, str] | None:
    """(name, addressee or "") of a leading bot command, from its entity."""
    text, entities = _body(m)
    for entity in entities:
        if entity.type == "bot_command" and entity.offset == 0:
            start, end = _span(text, entity)
            match = _COMMAND.fullmatch(text[start:end])
            if match is not None:
                return match.group(1), match.group(2) or ""
    return None


def _mention_spans(m: Message, me: BotIdentity) -> list[tuple[int, int]]:
    """Python-index spans of the entities that mention us."""
    text, entities = _body(m)
    spans = []
    for entity in entities:
        start, end = _span(text, entity)
        by_name = entity.type == "mention" and me.is_me(text[start:end])
        by_id = entity.type == "text_mention" and getattr(entity.user, "id", None) == me.id
        if by_name or by_id:
            spans.append((start, end))
    return spans


def _real_reply(m: Message) -> Message | None:
    reply = m.reply_to_message
    if reply is None:
        return None
    if m.is_topic_message and reply.message_id == m.message_thread_id:
        return None  # Telegram's implicit reply to the topic's creation message
    return reply


def _replied_to_bot(m: Message, me: BotIdentity) -> int | None:
    reply = _real_reply(m)
    if reply is None or reply.from_user is None or reply.from_user.id != me.id:
        return None
    return reply.message_id


def _clean_text(
    text: str,
    entities: list[MessageEntity],
    mentions: list[tuple[int, int]],
    me: BotIdentity,
) -> tuple[str, bool]:
    """Text without our mentions and without `@botname` on a leading command; whether a command
    named us."""
    cuts = list(mentions)
    addressed = False
    for entity in entities:
        if entity.type == "bot_command" and entity.offset == 0:
            start, end = _span(text, entity)
            word, _, name = text[start:end].partition("@")
            if name and me.is_me(name):
                cuts.append((start + len(word), end))
                addressed = True
    leading = any(start == 0 for start, _ in mentions)
    for start, end in sorted(cuts, reverse=True):
        before, after = text[:start], text[end:]
        if before.endswith(" ") and after.startswith(" "):
            after = after[1:]
        text = before + after
    if leading:
        text = text.lstrip(" ,:;")
    return text.strip(), addressed


def _span(text: str, entity: MessageEntity) -> tuple[int, int]:
    """Telegram counts entity offsets in UTF-16 code units; turn them into Python indices."""
    start = _py_index(text, entity.offset)
    return start, _py_index(text, entity.offset + entity.length, start)


def _py_index(text: str, utf16_offset: int, hint: int = 0) -> int:
    units = len(text[:hint].encode("utf-16-le")) // 2
    index = hint
    while index < len(text) and units < utf16_offset:
        units += 2 if ord(text[index]) > 0xFFFF else 1
        index += 1
    return index


def _attachments(m: Any) -> tuple[Attachment, ...]:
    found = []
    for field_name, kind in _MEDIA_KINDS:
        value = getattr(m, field_name, None)
        if value is None:
            continue
        item = value[-1] if isinstance(value, list) else value  # photo sizes: largest last
        found.append(
            Attachment(
                kind=kind,
                name=getattr(item, "file_name", None) or _DEFAULT_NAMES.get(field_name, ""),
                size=getattr(item, "file_size", None) or 0,
                mime=getattr(item, "mime_type", None) or _DEFAULT_MIMES.get(field_name, ""),
                file_id=getattr(item, "file_id", None) or "",
            )
        )
    return tuple(found)


def _display_name(first: str, last: str | None, username: str | None) -> str:
    name = " ".join(part for part in (first, last) if part)
    return name or username or ""
