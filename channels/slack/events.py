"""Slack payloads → `InboundMessage`: pure functions over the dicts Slack sends.

Kept apart from the adapter's I/O so every rule here is tested on plain payload dicts
(tests/unit/channels/test_slack_events.py). What the bot sees:

| event                                   | delivered as                                          |
|-----------------------------------------|-------------------------------------------------------|
| `app_mention` in a channel              | mentions_bot, thread_anchor = thread_ts or ts          |
| `message` in a DM (`channel_type: im`)  | is_dm, thread_anchor = thread_ts (None at top level)   |
| `message` in a channel thread           | mentions_bot False, thread_anchor = thread_ts: the     |
|                                         | manager serves it only if that thread is already ours  |
| `message` twin of an `app_mention`      | the same message as the mention (same channel + ts),   |
|                                         | so the manager's dedupe answers it once                |
| `block_actions` on a `q:<id>:<i>` button | a `ButtonPress`                                       |
| `block_actions` on our feedback buttons  | a `Vote` (`fb:up:<run>` / `fb:down:<run>`)            |
| `app_home_opened` on the Home tab        | a `HOME_REQUEST`: the worker publishes the home page  |
| `block_actions` on a Stop button         | `/stop` from the presser (`stop_press`; the adapter   |
|                                          | lets only the asker or an admin through)              |
| our slash command (`/switchboard stop`)  | `/stop` with `native` set: answered through its        |
|                                          | `response_url`, privately as the registry says         |

Bots (including ourselves and Slackbot, `USLACKBOT`), edits, deletions and other subtypes are dropped; `file_share` and
`thread_broadcast` carry a person's words and are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from channels.adapter import HOME_REQUEST
from channels.bindings import PolicyFor, Subject
from channels.commands import Place, command_spec
from channels.message import (
    Attachment,
    ButtonPress,
    InboundMessage,
    NativeCommand,
    Platform,
    Vote,
)

__all__ = [
    "BUTTON_PREFIX",
    "FEEDBACK_ACTION",
    "SLACKBOT_USER_ID",
    "STOP_ACTION",
    "BotIdentity",
    "button_value",
    "home_request",
    "is_for_bot",
    "parse_button_value",
    "parse_vote_value",
    "slash_to_inbound",
    "stop_press",
    "to_inbound",
    "vote_value",
]

BUTTON_PREFIX = "q:"
"""Clarification buttons carry `q:<question_id>:<option index>` as action_id and value."""

FEEDBACK_ACTION = "fb"
"""The action_id of the feedback buttons under an answer; each button's value is
`fb:<up|down>:<run_id>`."""
_VOTE_VALUES = ("up", "down")
STOP_ACTION = "stop"
"""The action_id of the Stop button under a reply being written; its value is `stop:<asker>`."""

_USER_SUBTYPES = frozenset({"file_share", "thread_broadcast"})
_SPACES = re.compile(r"[ \t]{2,}")


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is in a workspace, from `auth.test`."""

    user_id: str
    bot_id: str = ""
    team_id: str = ""
    name: str = ""  # the bot user's name, how `<@user_id>` reads in context


def button_value(question_id: str, index: int) -> str:
    return f"{BUTTON_PREFIX}{question_id}:{index}"


def parse_button_value(value: str) -> tuple[str, int] | None:
    """`q:<question_id>:<index>` → (question_id, index); None for anything else."""
    if not value.startswith(BUTTON_PREFIX):
        return None
    question_id, sep, index = value[len(BUTTON_PREFIX) :].rpartition(":")
    if not sep or not question_id or not index.isdigit():
        return None
    return question_id, int(index)


def vote_value(value: str, run_id: str) -> str:
    return f"{FEEDBACK_ACTION}:{value}:{run_id}"


def parse_vote_value(raw: str) -> tuple[str, str] | None:
    """`fb:<up|down>:<run_id>` → (value, run_id); None for anything else."""
    prefix, _, rest = raw.partition(":")
    value, _, run_id = rest.partition(":")
    if prefix != FEEDBACK_ACTION or value not in _VOTE_VALUES or not run_id:
        return None
    return value, run_id


def is_for_bot(event: Mapping[str, Any], me: BotIdentity, *, open_place: bool = False) -> bool:
    """Whether a Slack event (the inner `event` object) is a person talking to, or possibly
    near, the bot. Thread replies without a mention pass: only the manager knows (from Redis)
    whether the bot is in that thread. In an `open_place` (a channel whose binding says
    `require_mention: false`) every person's message passes."""
    kind = event.get("type")
    if kind not in ("app_mention", "message"):
        return False
    if _from_a_bot(event, me):
        return False
    subtype = event.get("subtype")
    if subtype is not None and subtype not in _USER_SUBTYPES:
        return False
    if not event.get("user") or not event.get("channel") or not event.get("ts"):
        return False
    if kind == "app_mention" or event.get("channel_type") == "im":
        return True
    if _mentions(str(event.get("text") or ""), me.user_id):
        return True
    thread_ts = event.get("thread_ts")
    return (bool(thread_ts) and thread_ts != event.get("ts")) or open_place


def _open_place(body: Mapping[str, Any], event: Mapping[str, Any], policy: PolicyFor) -> bool:
    """A channel message in a place that answers without a mention (bindings)."""
    if event.get("channel_type") not in ("channel", "group"):
        return False
    team = str(body.get("team_id") or event.get("team") or "")
    channel, user = str(event.get("channel") or ""), str(event.get("user") or "")
    return not policy(Subject("slack", team, channel, user)).require_mention


def to_inbound(
    body: Mapping[str, Any], me: BotIdentity, *, policy: PolicyFor | None = None
) -> InboundMessage | None:
    """A whole request body (Events API `event_callback` or a `block_actions` payload) as the
    normalised message, or None when it is not for the bot."""
    if body.get("type") == "block_actions":
        return _button_press(body, me) or _vote(body, me)
    event = body.get("event")
    if not isinstance(event, Mapping):
        return None
    open_place = policy is not None and _open_place(body, event, policy)
    if not is_for_bot(event, me, open_place=open_place):
        return None
    channel, ts = str(event["channel"]), str(event["ts"])
    raw_text = str(event.get("text") or "")
    is_dm = event.get("channel_type") == "im"
    thread_ts = event.get("thread_ts") or None
    event_id = body.get("event_id")
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id=str(body.get("team_id") or event.get("team") or me.team_id),
        chat_id=channel,
        sender_id=str(event["user"]),
        sender_name=_display_name(event),
        text=_clean_text(raw_text, me.user_id),
        provider_message_id=ts,
        is_dm=is_dm,
        mentions_bot=event.get("type") == "app_mention" or _mentions(raw_text, me.user_id),
        thread_anchor=thread_ts if is_dm else (thread_ts or ts),
        attachments=tuple(_attachment(f) for f in event.get("files") or () if isinstance(f, dict)),
        event_ids=(str(event_id),) if event_id else (),
        open_place=open_place,
        raw=body,
    )


def slash_to_inbound(
    body: Mapping[str, Any], me: BotIdentity, *, command: str
) -> InboundMessage | None:
    """Our slash command (`command`, e.g. `/switchboard`) as the normalised message: its first
    word is the command (`/switchboard` alone is `help`), the rest its arguments. Slack sends
    none from inside a thread, so the place is the DM or the channel itself."""
    if body.get("command") != command:
        return None
    user, channel = str(body.get("user_id") or ""), str(body.get("channel_id") or "")
    trigger, response_url = str(body.get("trigger_id") or ""), str(body.get("response_url") or "")
    if not user or not channel or not trigger or not response_url:
        return None
    words = str(body.get("text") or "").split(maxsplit=1)
    name = words[0].lstrip("/!").lower() if words else "help"
    args = words[1].strip() if len(words) > 1 else ""
    spec = command_spec(name)
    is_dm = channel.startswith("D") or body.get("channel_name") == "directmessage"
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id=str(body.get("team_id") or me.team_id),
        chat_id=channel,
        sender_id=user,
        sender_name=str(body.get("user_name") or user),
        text=f"/{name} {args}".strip(),
        provider_message_id=trigger,
        is_dm=is_dm,
        native=NativeCommand(
            name=name,
            private=spec.private if spec is not None else True,
            place=str(Place.DM if is_dm else Place.GROUP),
            response_url=response_url,
        ),
    )


def _action(body: Mapping[str, Any], matches: Callable[[str], bool]) -> Mapping[str, Any] | None:
    """The first of the payload's actions whose action id `matches`."""
    return next(
        (
            a
            for a in body.get("actions") or ()
            if isinstance(a, Mapping) and matches(str(a.get("action_id", "")))
        ),
        None,
    )


def _from_presser(
    body: Mapping[str, Any], me: BotIdentity, *, text: str = ""
) -> InboundMessage | None:
    """A press on a button under one of our messages, as a message from the presser replying to
    that message; None when the payload lacks the presser, the channel or the message."""
    user = body.get("user") or {}
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    pressed_ts = str(container.get("message_ts") or message.get("ts") or "")
    if not user.get("id") or not channel or not pressed_ts:
        return None
    is_dm = channel.startswith("D")
    thread_ts = container.get("thread_ts") or message.get("thread_ts") or None
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id=str((body.get("team") or {}).get("id") or user.get("team_id") or me.team_id),
        chat_id=channel,
        sender_id=str(user["id"]),
        sender_name=str(user.get("name") or user.get("username") or user["id"]),
        text=text,
        provider_message_id=pressed_ts,
        is_dm=is_dm,
        thread_anchor=thread_ts if is_dm else (thread_ts or pressed_ts),
    )


def _interaction_id(body: Mapping[str, Any], action: Mapping[str, Any]) -> str:
    return str(action.get("action_ts") or body.get("trigger_id") or "")


def _button_press(body: Mapping[str, Any], me: BotIdentity) -> InboundMessage | None:
    action = _action(body, lambda action_id: action_id.startswith(BUTTON_PREFIX))
    if action is None:
        return None
    parsed = parse_button_value(str(action.get("value") or action.get("action_id") or ""))
    label = action.get("text") or {}
    text = str(label.get("text") or "") if isinstance(label, Mapping) else ""
    msg = _from_presser(body, me, text=text)
    if parsed is None or msg is None:
        return None
    button = ButtonPress(
        question_id=parsed[0], option_index=parsed[1], interaction_id=_interaction_id(body, action)
    )
    return replace(
        msg, reply_to_id=msg.provider_message_id, reply_to_bot=True, button=button, raw=body
    )


def _vote(body: Mapping[str, Any], me: BotIdentity) -> InboundMessage | None:
    """A press on the feedback buttons under one of our answers, as the presser's vote."""
    action = _action(body, lambda action_id: action_id == FEEDBACK_ACTION)
    parsed = parse_vote_value(str(action.get("value") or "")) if action is not None else None
    msg = _from_presser(body, me)
    if action is None or parsed is None or msg is None:
        return None
    vote = Vote(
        value=parsed[0],
        run_id=parsed[1],
        message_id=msg.provider_message_id,
        interaction_id=_interaction_id(body, action),
    )
    return replace(msg, vote=vote)


def home_request(body: Mapping[str, Any], me: BotIdentity) -> InboundMessage | None:
    """`app_home_opened` on the Home tab, as a request for that person's home page."""
    event = body.get("event") or {}
    user, channel = str(event.get("user") or ""), str(event.get("channel") or "")
    if event.get("type") != "app_home_opened" or event.get("tab") != "home" or not user:
        return None
    event_id = body.get("event_id")
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id=str(body.get("team_id") or me.team_id),
        chat_id=channel or user,
        sender_id=user,
        sender_name=user,
        text="",
        provider_message_id=f"home:{event.get('event_ts') or event_id}",
        is_dm=True,
        event_ids=(str(event_id),) if event_id else (),
        native=NativeCommand(name=HOME_REQUEST, private=True, place=str(Place.DM)),
    )


def stop_press(body: Mapping[str, Any], me: BotIdentity) -> tuple[InboundMessage, str] | None:
    """A press on the Stop button under a reply being written, as the presser's `/stop` in
    that conversation, with the asker's id its value names (the adapter decides who may)."""
    action = next(
        (
            a
            for a in body.get("actions") or ()
            if isinstance(a, Mapping) and a.get("action_id") == STOP_ACTION
        ),
        None,
    )
    prefix, _, asker = str((action or {}).get("value") or "").partition(":")
    user = body.get("user") or {}
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    reply_ts = str(container.get("message_ts") or message.get("ts") or "")
    if action is None or prefix != STOP_ACTION or not asker or not user.get("id") or not channel:
        return None
    is_dm = channel.startswith("D")
    thread_ts = container.get("thread_ts") or message.get("thread_ts") or None
    msg = InboundMessage(
        platform=Platform.SLACK,
        workspace_id=str((body.get("team") or {}).get("id") or user.get("team_id") or me.team_id),
        chat_id=channel,
        sender_id=str(user["id"]),
        sender_name=str(user.get("name") or user.get("username") or user["id"]),
        text="/stop",
        provider_message_id=str(action.get("action_ts") or body.get("trigger_id") or reply_ts),
        is_dm=is_dm,
        thread_anchor=thread_ts if is_dm else (thread_ts or reply_ts),
    )
    return msg, asker


SLACKBOT_USER_ID = "USLACKBOT"
"""Slackbot's user id in every workspace: its DM notices ("You have been removed from #…") carry
no `bot_id`, yet answering them would spend a model call on a reply to a bot."""


def _from_a_bot(event: Mapping[str, Any], me: BotIdentity) -> bool:
    return bool(
        event.get("user") == SLACKBOT_USER_ID
        or event.get("bot_id")
        or event.get("bot_profile")
        or event.get("subtype") == "bot_message"
        or (me.user_id and event.get("user") == me.user_id)
    )


def _mention_pattern(user_id: str) -> re.Pattern[str]:
    return re.compile(rf"\s*<@{re.escape(user_id)}(?:\|[^>]*)?>\s*")


def _mentions(text: str, user_id: str) -> bool:
    return bool(user_id) and _mention_pattern(user_id).search(text) is not None


def _clean_text(text: str, bot_user_id: str) -> str:
    """Drop the bot mention and undo Slack's three escapes (`&lt;`, `&gt;`, `&amp;`), so the
    agent reads what the person typed; the renderer escapes again on the way out."""
    if bot_user_id:
        text = _mention_pattern(bot_user_id).sub(" ", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return _SPACES.sub(" ", text).strip()


def _display_name(event: Mapping[str, Any]) -> str:
    profile = event.get("user_profile") or {}
    for key in ("display_name", "real_name", "name"):
        value = profile.get(key) if isinstance(profile, Mapping) else None
        if value:
            return str(value)
    return str(event["user"])


def _attachment(file: Mapping[str, Any]) -> Attachment:
    """A shared file by reference. A Slack Connect file (shared from another organisation)
    arrives as a stub, `{"id", "file_access": "check_file_info"}`, with no name or URL: it
    keeps only its id, and `files.info` fills in the rest when the worker fetches it."""
    if file.get("file_access") == "check_file_info":
        return Attachment(kind="file", name=str(file.get("name") or ""), file_id=str(file["id"]))
    mimetype = str(file.get("mimetype") or "")
    major = mimetype.partition("/")[0]
    kind = major if major in ("image", "audio", "video") else "file"
    return Attachment(
        kind=kind,
        name=str(file.get("name") or ""),
        url=str(file.get("url_private") or ""),  # read with the bot token (adapter `fetch`)
        size=int(file.get("size") or 0),
        mime=mimetype,
        file_id=str(file.get("id") or ""),
    )
