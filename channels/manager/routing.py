"""Which agent thread a message belongs to (the table in `channels/message.py`)."""

from __future__ import annotations

from channels.bindings.sessions import is_per_user_key
from channels.manager.ports import ThreadStore
from channels.message import InboundMessage, Platform

__all__ = ["ThreadResolver", "creates_conversation"]


def creates_conversation(msg: InboundMessage) -> bool:
    """Whether this message may start a conversation: it is addressed to the bot, or it is in a
    place that is itself a conversation with the bot (a Discord thread the bot created)."""
    addressed = msg.is_dm or msg.mentions_bot or msg.reply_to_bot or msg.button is not None
    addressed = addressed or msg.open_place
    return addressed or msg.platform is Platform.DISCORD


class ThreadResolver:
    def __init__(self, threads: ThreadStore) -> None:
        self._threads = threads

    async def thread_for(
        self, msg: InboundMessage, conversation: str, *, create: bool
    ) -> str | None:
        """A reply to a bot message names its chain's thread; otherwise the conversation's,
        created only when `create`."""
        if msg.reply_to_id and not msg.is_dm and not is_per_user_key(conversation):
            found = await self._threads.thread_for_message(
                str(msg.platform), msg.chat_id, msg.reply_to_id
            )
            if found is not None:
                return found
        if create:
            return await self._threads.resolve(conversation)
        return await self._threads.peek(conversation)
