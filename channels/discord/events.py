"""Pure decisions on Discord gateway payloads: is it for the bot, and what `InboundMessage` is it.

Everything here works on the wire dicts (MESSAGE_CREATE / INTERACTION_CREATE `d` objects), so it is
tested without a socket. The adapter (`channels/discord.py`) supplies what a payload cannot say on
its own: whether the channel is a thread the bot owns, and the thread it just created for a mention.

Button custom ids are `q:<question_id>:<option index>` (a question's options) and
`fb:<up|down>:<run_id>` (the feedback buttons under an answer) and `stop` (the Stop button under
a reply being written: it names no one, since a client may send any custom id; whose run it
stops is the manager's to check, from the queue); any process can decode a press from the id
alone, so presses survive restarts without discord.py's stored views. A 👍/👎 *reaction* on an
answer names its run the same way: through the answer's own feedback buttons (`vote_run`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from channels.bindings import DEFAULT_POLICY, PlacePolicy
from channels.commands import Place, command_spec
from channels.message import (
    Attachment,
    ButtonPress,
    DiscordHandle,
    InboundMessage,
    NativeCommand,
    Platform,
    Vote,
)
from switchboard.conversation import ContextMessage

__all__ = [
    "THREAD_NAME_MAX",
    "BotIdentity",
    "author_name",
    "command_to_inbound",
    "is_for_bot",
    "is_our_button",
    "is_stop_custom_id",
    "mentions_bot",
    "other_vote_emoji",
    "parse_custom_id",
    "parse_vote_custom_id",
    "press_to_inbound",
    "question_custom_id",
    "reaction_to_inbound",
    "reaction_value",
    "readable_content",
    "snowflake_time",
    "stop_custom_id",
    "stop_to_inbound",
    "strip_mention",
    "thread_name",
    "to_context",
    "to_inbound",
    "vote_custom_id",
    "vote_run",
    "vote_to_inbound",
]

THREAD_NAME_MAX = 100  # Discord rejects longer thread names
_DEFAULT_THREAD_NAME = "Switchboard"
_USER_MESSAGE_TYPES = frozenset({0, 19})  # DEFAULT, REPLY; system messages are never for us
_COMPONENT_INTERACTION = 3
_CUSTOM_ID = re.compile(r"^q:(?P<qid>[^:]{1,90}):(?P<index>\d{1,2})$")
_VOTE_ID = re.compile(r"^fb:(?P<value>up|down):(?P<run>[^:]{1,90})$")
_VOTE_EMOJI = {"👍": "up", "👎": "down"}
_SWAP = str.maketrans("👍👎", "👎👍")
_TONE = re.compile("[\U0001f3fb-\U0001f3ff\ufe0f]")  # skin tones, the emoji presentation mark
_STOP_ID = re.compile(r"^stop(?::[^:]{1,90})?$")  # `stop:<anything>`: an older build's button


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is on Discord, as READY reported it."""

    id: str
    name: str = ""


def _author_id(payload: Mapping[str, Any]) -> str:
    return str((payload.get("author") or {}).get("id", ""))


def mentions_bot(payload: Mapping[str, Any], me: BotIdentity) -> bool:
    """Whether the message mentions the bot (a `<@id>` in the text or a reply that pings it)."""
    if any(str(user.get("id")) == me.id for user in payload.get("mentions") or ()):
        return True
    return re.search(rf"<@!?{re.escape(me.id)}>", payload.get("content") or "") is not None


def is_for_bot(
    payload: Mapping[str, Any],
    me: BotIdentity,
    *,
    in_bot_thread: bool = False,
    policy: PlacePolicy = DEFAULT_POLICY,
) -> bool:
    """DMs, mentions, and anything inside a thread the bot owns; never our own words, and
    another bot's only where the place's `policy` takes them (by default never). A place whose
    policy needs no mention takes every message."""
    author = payload.get("author") or {}
    if _author_id(payload) == me.id:
        return False
    if (author.get("bot") or payload.get("webhook_id")) and not policy.takes_bot(
        mentioned=mentions_bot(payload, me)
    ):
        return False
    if payload.get("type", 0) not in _USER_MESSAGE_TYPES:
        return False
    if not payload.get("guild_id"):
        return True
    return in_bot_thread or mentions_bot(payload, me) or not policy.require_mention


def strip_mention(text: str, bot_id: str) -> str:
    """The text without the bot's `<@id>` / `<@!id>` mentions, whitespace tidied."""
    stripped = re.sub(rf"<@!?{re.escape(bot_id)}>", " ", text)
    return re.sub(r"[ \t]{2,}", " ", stripped).strip()


def thread_name(prompt: str) -> str:
    """A thread title from the prompt's first line, cut at a word within Discord's 100 chars."""
    line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
    line = re.sub(r"\s+", " ", line)
    if not line:
        return _DEFAULT_THREAD_NAME
    if len(line) <= THREAD_NAME_MAX:
        return line
    cut = line[: THREAD_NAME_MAX - 1]
    space = cut.rfind(" ")
    if space > THREAD_NAME_MAX // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _display_name(user: Mapping[str, Any], member: Mapping[str, Any] | None) -> str:
    nick = (member or {}).get("nick")
    return str(nick or user.get("global_name") or user.get("username") or user.get("id", ""))


def _attachment(data: Mapping[str, Any]) -> Attachment:
    content_type = str(data.get("content_type") or "")
    major = content_type.split("/", 1)[0]
    kind = major if major in {"image", "audio", "video"} else "file"
    return Attachment(
        kind=kind,
        name=str(data.get("filename", "")),
        url=str(data.get("url", "")),  # a signed CDN URL: fetched as is, never logged
        size=int(data.get("size") or 0),
        mime=content_type,
    )


_DISCORD_EPOCH_MS = 1_420_070_400_000
_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&\d+>")
_CHANNEL_MENTION = re.compile(r"<#\d+>")
_CUSTOM_EMOJI = re.compile(r"<a?(:\w+:)\d+>")


def snowflake_time(snowflake: str) -> float:
    """When a Discord id was made (epoch seconds): a message's send time, without parsing."""
    try:
        return ((int(snowflake) >> 22) + _DISCORD_EPOCH_MS) / 1000
    except ValueError:
        return 0.0


def author_name(payload: Mapping[str, Any]) -> str:
    """The author's name as the guild shows it, as far as the payload says."""
    return _display_name(payload.get("author") or {}, payload.get("member"))


def readable_content(payload: Mapping[str, Any], names: Mapping[str, str] | None = None) -> str:
    """A message's content as the client shows it: user mentions by name (`names` first, by
    user id, then the payload's own mention list), roles, channels and custom emoji in words."""
    known = {
        str(u.get("id")): _display_name(u, u.get("member")) for u in payload.get("mentions") or ()
    }
    known.update(names or {})
    text = str(payload.get("content") or "")
    text = _USER_MENTION.sub(lambda m: "@" + known.get(m.group(1), "someone"), text)
    text = _ROLE_MENTION.sub("@role", text)
    text = _CHANNEL_MENTION.sub("#channel", text)
    return _CUSTOM_EMOJI.sub(r"\1", text)


def to_context(
    payload: Mapping[str, Any],
    me: BotIdentity,
    *,
    replied_to: bool = False,
    names: Mapping[str, str] | None = None,
) -> ContextMessage:
    """A message payload (gateway, REST or a `referenced_message`) as context for a turn;
    `names` (user id → display name) overrides the payload's."""
    author = _author_id(payload)
    reference = payload.get("message_reference") or {}
    replies = payload.get("type") == 19 and reference.get("message_id")
    return ContextMessage(
        message_id=str(payload.get("id") or ""),
        sender=(names or {}).get(author) or author_name(payload),
        sent_at=snowflake_time(str(payload.get("id") or "")),
        text=readable_content(payload, names),
        attachments=tuple(
            str(a.get("filename") or "file") for a in payload.get("attachments") or ()
        ),
        is_self=author == me.id,
        replied_to=replied_to,
        reply_to_id=str(reference.get("message_id")) if replies else "",
    )


def to_inbound(
    payload: Mapping[str, Any], me: BotIdentity, *, chat_id: str | None = None, parent_id: str = ""
) -> InboundMessage:
    """The normalised message; `chat_id` overrides the channel (the thread made for a mention),
    `parent_id` names the channel that thread belongs to."""
    guild_id = str(payload.get("guild_id") or "")
    author = payload.get("author") or {}
    reference = payload.get("message_reference") or {}
    referenced = payload.get("referenced_message") or {}
    reply_to = reference.get("message_id") if payload.get("type") == 19 else None
    return InboundMessage(
        platform=Platform.DISCORD,
        workspace_id=guild_id,
        chat_id=chat_id or str(payload["channel_id"]),
        sender_id=_author_id(payload),
        sender_name=_display_name(author, payload.get("member")),
        sender_roles=tuple(str(r) for r in (payload.get("member") or {}).get("roles") or ()),
        parent_id=parent_id,
        text=strip_mention(payload.get("content") or "", me.id),
        provider_message_id=str(payload["id"]),
        is_dm=not guild_id,
        mentions_bot=mentions_bot(payload, me),
        reply_to_id=str(reply_to) if reply_to else None,
        reply_to_bot=_author_id(referenced) == me.id if referenced else False,
        attachments=tuple(_attachment(a) for a in payload.get("attachments") or ()),
        sent_at=snowflake_time(str(payload["id"])),
        quoted=(to_context(referenced, me, replied_to=True),) if reply_to and referenced else (),
        handle=DiscordHandle(channel_id=str(payload["channel_id"])),
        raw=dict(payload),
    )


_APPLICATION_COMMAND = 2
_THREAD_TYPES = frozenset({10, 11, 12})  # announcement, public and private threads


def command_to_inbound(payload: Mapping[str, Any]) -> InboundMessage | None:
    """A slash command (INTERACTION_CREATE of type 2) as a native command message: `/name args`
    from the options, answered through the interaction token. The handle keeps only what the
    adapter reads again (the channel, the member's permissions there), never the token twice."""
    if payload.get("type") != _APPLICATION_COMMAND:
        return None
    data = payload.get("data") or {}
    name = str(data.get("name") or "")
    if not name or not payload.get("id") or not payload.get("token"):
        return None
    args = " ".join(str(o.get("value")) for o in data.get("options") or () if "value" in o)
    member = payload.get("member")
    user = (member or {}).get("user") or payload.get("user") or {}
    guild_id = str(payload.get("guild_id") or "")
    channel = payload.get("channel") or {}
    channel_id = str(payload.get("channel_id") or channel.get("id") or "")
    if not guild_id:
        place = Place.DM
    elif channel.get("type") in _THREAD_TYPES:
        place = Place.THREAD
    else:
        place = Place.GROUP
    spec = command_spec(name)
    return InboundMessage(
        platform=Platform.DISCORD,
        workspace_id=guild_id,
        chat_id=channel_id,
        sender_id=str(user.get("id", "")),
        sender_name=_display_name(user, member),
        text=f"/{name} {args}".strip(),
        provider_message_id=str(payload["id"]),
        is_dm=not guild_id,
        native=NativeCommand(
            name=name,
            private=spec.private if spec is not None else True,
            place=str(place),
            application_id=str(payload.get("application_id") or ""),
            token=str(payload["token"]),
        ),
        handle=DiscordHandle(
            channel_id=channel_id, permissions=str((member or {}).get("permissions") or 0)
        ),
    )


def question_custom_id(question_id: str, index: int) -> str:
    return f"q:{question_id}:{index}"


def parse_custom_id(custom_id: str) -> tuple[str, int] | None:
    """(question id, option index) for one of our buttons; None for anything else."""
    match = _CUSTOM_ID.match(custom_id)
    if match is None:
        return None
    return match["qid"], int(match["index"])


def _component_custom_id(payload: Mapping[str, Any]) -> str | None:
    """The custom id of a button press; None for any other interaction."""
    if payload.get("type") != _COMPONENT_INTERACTION:
        return None
    return str((payload.get("data") or {}).get("custom_id", ""))


def _from_presser(payload: Mapping[str, Any], *, text: str, message_id: str) -> InboundMessage:
    """A button press as a message from the person who pressed it, in the press's channel."""
    member = payload.get("member")
    user = (member or {}).get("user") or payload.get("user") or {}
    guild_id = str(payload.get("guild_id") or "")
    channel_id = payload.get("channel_id") or (payload.get("channel") or {}).get("id")
    return InboundMessage(
        platform=Platform.DISCORD,
        workspace_id=guild_id,
        chat_id=str(channel_id),
        sender_id=str(user.get("id", "")),
        sender_name=_display_name(user, member),
        text=text,
        provider_message_id=message_id or str(payload["id"]),
        is_dm=not guild_id,
    )


def press_to_inbound(payload: Mapping[str, Any]) -> InboundMessage | None:
    """A press on one of our question buttons, as a message from the presser; None otherwise."""
    parsed = parse_custom_id(_component_custom_id(payload) or "")
    if parsed is None:
        return None
    message_id = str((payload.get("message") or {}).get("id") or "")
    button = ButtonPress(
        question_id=parsed[0], option_index=parsed[1], interaction_id=str(payload["id"])
    )
    presser = _from_presser(payload, text="", message_id=message_id)
    handle = DiscordHandle(
        channel_id=presser.chat_id,
        application_id=str(payload.get("application_id") or ""),
        token=str(payload.get("token") or ""),
    )
    return replace(presser, button=button, handle=handle)


def vote_custom_id(value: str, run_id: str) -> str:
    return f"fb:{value}:{run_id}"


def parse_vote_custom_id(custom_id: str) -> tuple[str, str] | None:
    """(value, run id) for one of our feedback buttons; None for anything else."""
    match = _VOTE_ID.match(custom_id)
    if match is None:
        return None
    return match["value"], match["run"]


def is_our_button(custom_id: str) -> bool:
    """A question option or a feedback button of ours (anything else is discord.py's)."""
    return (
        parse_custom_id(custom_id) is not None
        or parse_vote_custom_id(custom_id) is not None
        or is_stop_custom_id(custom_id)
    )


def vote_to_inbound(payload: Mapping[str, Any]) -> InboundMessage | None:
    """A press on the feedback buttons under one of our answers, as the presser's vote."""
    parsed = parse_vote_custom_id(_component_custom_id(payload) or "")
    if parsed is None:
        return None
    message_id = str((payload.get("message") or {}).get("id") or "")
    vote = Vote(
        value=parsed[0], run_id=parsed[1], message_id=message_id, interaction_id=str(payload["id"])
    )
    return replace(_from_presser(payload, text="", message_id=message_id), vote=vote)


def stop_custom_id() -> str:
    """The Stop button's id: the same for every reply, naming no one (see the module doc)."""
    return "stop"


def is_stop_custom_id(custom_id: str) -> bool:
    """One of our Stop buttons (an older build's `stop:<id>` too, its id never read)."""
    return _STOP_ID.match(custom_id) is not None


def stop_to_inbound(payload: Mapping[str, Any]) -> InboundMessage | None:
    """A press on the Stop button under a reply being written, as the presser's `/stop` in that
    channel (answered through the press's interaction, like a slash command)."""
    if not is_stop_custom_id(_component_custom_id(payload) or ""):
        return None
    guild_id = str(payload.get("guild_id") or "")
    thread = (payload.get("channel") or {}).get("type") in _THREAD_TYPES
    place = Place.DM if not guild_id else Place.THREAD if thread else Place.GROUP
    native = NativeCommand(
        name="stop",
        place=str(place),
        application_id=str(payload.get("application_id") or ""),
        token=str(payload.get("token") or ""),
    )
    presser = _from_presser(payload, text="/stop", message_id="")
    member = payload.get("member") or {}
    handle = DiscordHandle(  # the presser's permissions, for the manager's asker-or-admin rule
        channel_id=presser.chat_id, permissions=str(member.get("permissions") or 0)
    )
    return replace(presser, native=native, handle=handle)


def reaction_value(emoji: Mapping[str, Any]) -> str:
    """`up` or `down` for a 👍 or 👎 reaction (any skin tone); "" for any other emoji, and for a
    server's custom emoji merely named so."""
    if emoji.get("id"):
        return ""
    return _VOTE_EMOJI.get(_TONE.sub("", str(emoji.get("name") or "")), "")


def other_vote_emoji(name: str) -> str:
    """The opposite vote to the 👍/👎 reaction `name`, in the same skin tone (the one the person
    reacts with): what to look for when they take one away."""
    return name.translate(_SWAP)


def vote_run(message: Mapping[str, Any], bot_id: str) -> str:
    """The run a message of ours answered, read from its own 👍/👎 buttons (only a final answer
    carries them, and Discord serves them as we sent them); "" for anyone else's message and for
    ours without them (a reply still being written, a notice)."""
    if str((message.get("author") or {}).get("id") or "") != bot_id:
        return ""
    for row in message.get("components") or ():
        for component in (row or {}).get("components") or ():
            parsed = parse_vote_custom_id(str((component or {}).get("custom_id") or ""))
            if parsed is not None:
                return parsed[1]
    return ""


def reaction_to_inbound(
    payload: Mapping[str, Any], *, value: str, run_id: str, event_id: str
) -> InboundMessage:
    """A 👍/👎 reaction (MESSAGE_REACTION_ADD / _REMOVE fields) on the answer of `run_id` as the
    reacting person's vote, shaped as a press on its button is (so the manager holds it to the
    same one vote per person per answer); `value` "" withdraws it."""
    member = payload.get("member")
    user = (member or {}).get("user") or {"id": payload["user_id"]}
    guild_id = str(payload.get("guild_id") or "")
    message_id = str(payload["message_id"])
    return InboundMessage(
        platform=Platform.DISCORD,
        workspace_id=guild_id,
        chat_id=str(payload["channel_id"]),
        sender_id=str(payload["user_id"]),
        sender_name=_display_name(user, member),
        text="",
        provider_message_id=message_id,
        is_dm=not guild_id,
        vote=Vote(value=value, run_id=run_id, message_id=message_id, interaction_id=event_id),
    )
