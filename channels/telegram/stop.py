"""Telegram's Stop button on a draft → `/stop` for that chat.

A draft sent with `can_stop` shows the user a Stop button; pressing it sends the bot a
`stopped_message_generation` update (the chat, the draft id, the topic). It is delivered as the
user typing `/stop` in that chat, so the run stops exactly as `/stop` stops it: the text shown so
far is kept as a message, marked "(stopped)". Drafts exist only in private chats, so the chat is
the user's own and the presser is the asker. Pure: tested on payload dicts.
"""

from __future__ import annotations

from typing import Any

from aiogram.types import Update

from channels.message import InboundMessage, Platform

__all__ = ["stop_to_inbound"]


def stop_to_inbound(update: Update | dict[str, Any]) -> InboundMessage | None:
    """The `/stop` a press on a draft's Stop button means; None for any other update."""
    u = update if isinstance(update, Update) else Update.model_validate(update)
    stopped = u.stopped_message_generation
    if stopped is None or stopped.chat.type != "private":
        return None
    chat = stopped.chat
    topic = stopped.message_thread_id
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id="",
        chat_id=str(chat.id),
        sender_id=str(chat.id),  # a private chat's id is its user's
        sender_name=chat.full_name or chat.username or str(chat.id),
        text="/stop",
        provider_message_id=f"draft{stopped.draft_id}",
        is_dm=True,
        thread_anchor=str(topic) if topic else None,
        is_topic=bool(topic),
        event_ids=(f"u{u.update_id}",),
    )
