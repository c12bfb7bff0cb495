"""Conversation keys under a binding's `sessions`: one conversation for the place (`shared`) or
one per person in it (`per_user`).

The place is the platform's own conversation (a Slack thread, a Discord thread, a Telegram
forum topic), except in a Telegram group, whose default is one conversation per reply chain:
there `shared` makes the group one conversation, and `per_user` one per member. A per-user
key ends in `:per-user:<sender>`; a reply to the bot's message does not cross into another
person's conversation (the resolver asks `is_per_user_key`).
"""

from __future__ import annotations

from channels.message import InboundMessage, Platform, conversation_key

__all__ = ["PER_USER", "is_per_user_key", "session_key"]

PER_USER = ":per-user:"


def session_key(msg: InboundMessage, sessions: str | None) -> str:
    """The conversation this message belongs to under `sessions` (None: the default key)."""
    if sessions is None or msg.is_dm or msg.platform is Platform.CONSOLE:
        return conversation_key(msg)
    if msg.platform is Platform.TELEGRAM:
        topic = msg.is_topic and msg.thread_anchor
        base = f"tg:{msg.chat_id}" + (f":t{msg.thread_anchor}" if topic else "")
    else:
        base = conversation_key(msg)
    return f"{base}{PER_USER}{msg.sender_id}" if sessions == "per_user" else base


def is_per_user_key(conversation: str) -> bool:
    return PER_USER in conversation
