"""A turn's answer in chat: the question (sent whole, with its buttons), or the reply (settling
its stream, or sent at once), then the files the agent produced."""

from __future__ import annotations

import structlog

from agent.result import TurnResult
from channels.manager.context import TurnSession
from channels.manager.files import send_turn_files
from channels.manager.questions import QuestionDesk
from channels.manager.replies import Responder

__all__ = ["ReplyDelivery"]

_log = structlog.get_logger(__name__)


class ReplyDelivery:
    def __init__(self, *, questions: QuestionDesk, responder: Responder) -> None:
        self._questions = questions
        self._say = responder

    async def deliver(self, session: TurnSession, result: TurnResult, asker_id: str) -> None:
        """Send the answer; the ids of every message it took land in `session.sent_ids`."""
        adapter, target = session.adapter, session.target
        assert target is not None
        stream, session.stream = session.stream, None
        if result.question is not None:
            if stream is not None:  # a question is sent whole, with its buttons
                await stream.cancel(None)
            sent = await self._questions.ask(
                adapter, target, session.thread_id, asker_id, result.question
            )
        elif stream is not None:
            sent = await stream.finish(self._say.reply_chunks(adapter, result.reply_text))
        else:
            sent = await self._say.send_reply(adapter, target, result.reply_text)
        session.sent_ids = list(sent.message_ids)
        session.sent_chat = sent.chat_id
        _log.info("reply.sent", chunks=len(sent.message_ids))
        session.sent_ids += await send_turn_files(adapter, target, result.files, self._say)
