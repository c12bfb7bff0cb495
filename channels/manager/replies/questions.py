"""Clarification questions in chat: asking (with buttons), checking presses, showing the answer."""

from __future__ import annotations

import re
from collections.abc import Sequence

import structlog

from agent.result import Question
from channels.adapter import Adapter, Chunk, QuestionPrompt, SentRef
from channels.manager.gates.askers import is_asker
from channels.manager.ports import QuestionStore
from channels.message import InboundMessage, ReplyTarget
from channels.render import render_chunks
from switchboard.errors import SwitchboardError
from switchboard.state import PendingQuestion

__all__ = ["QuestionDesk", "answer_text"]

_log = structlog.get_logger(__name__)
_NUMBER = re.compile(r"^\s*(\d{1,2})[.)]?\s*$")


def answer_text(text: str, question: PendingQuestion) -> str:
    """A typed answer; a bare number picks that option."""
    match = _NUMBER.match(text)
    if match and question.options and 1 <= int(match.group(1)) <= len(question.options):
        return question.options[int(match.group(1)) - 1]
    return text


class QuestionDesk:
    def __init__(self, questions: QuestionStore) -> None:
        self._questions = questions

    async def check_press(self, adapter: Adapter, msg: InboundMessage) -> str | None:
        """The thread a valid press answers (the press is then closed on the platform), or None
        when it is refused (the presser is told why, privately)."""
        press = msg.button
        assert press is not None
        thread_id = await self._questions.thread_of(press.question_id)
        question = None if thread_id is None else await self._questions.get(thread_id)
        if question is None or question.question_id != press.question_id:
            await adapter.answer_button(msg, "This question is no longer open.")
            return None
        if not is_asker(msg, question.asker_id):
            _log.info("question.press_refused")
            await adapter.answer_button(msg, "Only the person who asked can answer this question.")
            return None
        if not 0 <= press.option_index < len(question.options):
            await adapter.answer_button(msg, "That option doesn't exist.")
            return None
        await adapter.answer_button(msg, None)
        return thread_id

    def prepare(
        self, adapter: Adapter, asker_id: str, question: Question
    ) -> tuple[PendingQuestion, tuple[Chunk, ...]]:
        """The question as it will be stored and shown (its id is fixed here, so a resend of
        the same question after a crash keeps the buttons' id)."""
        pending = PendingQuestion(asker_id=asker_id, text=question.text, options=question.options)
        return pending, tuple(render_chunks(question.text, adapter.capabilities))

    async def ask(
        self,
        adapter: Adapter,
        target: ReplyTarget,
        thread_id: str,
        pending: PendingQuestion,
        chunks: Sequence[Chunk],
    ) -> SentRef:
        await self._questions.put(thread_id, pending)
        if adapter.capabilities.buttons and pending.options:
            prompt = QuestionPrompt(pending.question_id, pending.options, pending.asker_id)
            sent = await adapter.ask(target, chunks, prompt)
        else:
            sent = await adapter.send(target, chunks)
        if sent.message_ids:  # only for showing the answer later: the question is out already
            try:
                await self._questions.set_message(thread_id, pending, sent.message_ids[-1])
            except Exception as exc:  # never the question's failure: it reached the chat
                _log.warning("question.message_id_lost", error=type(exc).__name__)
        _log.info("question.asked", options=len(pending.options))
        return sent

    async def show_answer(
        self, adapter: Adapter, target: ReplyTarget, question: PendingQuestion, answer: str
    ) -> None:
        """Edit the question message to show the chosen answer (and drop its buttons)."""
        if not (adapter.capabilities.can_edit and question.message_id):
            return
        chunks = render_chunks(f"{question.text}\n\n✅ {answer}", adapter.capabilities)
        if not chunks:
            return
        try:
            await adapter.edit(target, question.message_id, chunks[-1])
        except SwitchboardError as exc:
            _log.warning("question.edit_failed", category=exc.category)
