"""Telegram reactions → votes: a 👍 or 👎 on a bot answer rates it (Telegram has no feedback
buttons, and a keyboard under every answer would crowd the chat).

A `message_reaction` update says what one user's reactions on one message were and are. Only a
change that involves 👍 or 👎 becomes a `Vote` (👍 wins when both are set; taking both away
withdraws the vote); the manager finds which answer the message is and whether the reacting user
asked for it. Anonymous reactions (a channel or an anonymous admin, no `user`) count for no one.
Pure: tested on payload dicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiogram.types import MessageReactionUpdated, ReactionTypeEmoji, Update

from channels.message import InboundMessage, Platform, Vote

__all__ = ["DOWN", "UP", "reaction_vote", "vote_value"]

UP = "👍"
DOWN = "👎"


def vote_value(reactions: Iterable[Any]) -> str:
    """`up`, `down` or "" for one side (old or new) of a reaction change."""
    emoji = {r.emoji for r in reactions if isinstance(r, ReactionTypeEmoji)}
    if UP in emoji:
        return "up"
    if DOWN in emoji:
        return "down"
    return ""


def reaction_vote(update: Update | dict[str, Any]) -> InboundMessage | None:
    """The vote a reaction update casts or withdraws; None when it does not touch 👍/👎."""
    u = update if isinstance(update, Update) else Update.model_validate(update)
    change: MessageReactionUpdated | None = u.message_reaction
    if change is None or change.user is None or change.user.is_bot:
        return None
    old, new = vote_value(change.old_reaction), vote_value(change.new_reaction)
    if old == new:
        return None
    user = change.user
    chat = change.chat
    is_dm = chat.type == "private"
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id="" if is_dm else str(chat.id),
        chat_id=str(chat.id),
        sender_id=str(user.id),
        sender_name=user.full_name or user.username or str(user.id),
        text="",
        provider_message_id=str(change.message_id),
        is_dm=is_dm,
        vote=Vote(
            value=new,
            message_id=str(change.message_id),
            interaction_id=f"u{u.update_id}",
        ),
        event_ids=(f"u{u.update_id}",),
    )
