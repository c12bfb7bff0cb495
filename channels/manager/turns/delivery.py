"""A batch's recorded answer into the chat, piece by piece, each accepted piece receipted.

The pieces are sent in order: the reply chunks (settling the streamed message when there is one),
or the question whole with its buttons, then the files. A piece with a receipt from an earlier
attempt is not sent again. Every piece but the last is receipted as soon as the platform accepts
it, before the next one is sent (a streamed reply's stream settles only on the messages it
already shows; its further chunks are pieces like any other); the last one's receipt is the
batch's `finish`, one step later. So the only piece that can reach the chat twice is one the
platform accepted in the instant before its receipt was lost.

A piece being sent is not cut off by a lost lock (the request may already be on the wire, and
cancelling it would only turn a sent piece into one without a receipt); no new piece starts on a
lost lock. A platform that refuses a piece for good (a 4xx other than a rate limit) gets one error line with
a reference id instead, and the answer ends there; a rate limit or an outage propagates, and the
batch is tried again later (attempts are bounded).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

import structlog

from channels import metrics
from channels.adapter import Adapter, Chunk, ReplyStream, SentRef
from channels.manager.context import TurnSession
from channels.manager.replies.questions import QuestionDesk
from channels.manager.replies.responder import Responder
from channels.manager.turns.delivered import Delivered
from channels.manager.turns.files import send_turn_files
from channels.manager.turns.hold import LockLost
from channels.manager.turns.ledger import Piece, TurnRecord
from channels.message import ReplyTarget
from switchboard.errors import PlatformError, PlatformRateLimited

__all__ = ["Receipt", "ReplyDelivery"]

_log = structlog.get_logger(__name__)

Receipt = Callable[[dict[int, str]], Awaitable[None]]
"""Records that pieces were accepted: piece index → `<chat>|<id>,<id>`."""


class ReplyDelivery:
    def __init__(
        self, *, questions: QuestionDesk, responder: Responder, votes: bool = False
    ) -> None:
        self._questions = questions
        self._say = responder
        self._votes = votes  # a final answer carries 👍/👎 where the platform's votes are buttons

    async def deliver(
        self,
        session: TurnSession,
        record: TurnRecord,
        receipts: dict[int, str],
        receipt: Receipt,
    ) -> Delivered:
        """Send what has no receipt yet; where every piece of the answer is."""
        target = session.target
        assert target is not None
        out = Delivered(chat_id=target.chat_id)
        pieces, last = record.pieces, len(record.pieces) - 1
        if self._votes and session.adapter.capabilities.votes == "buttons":
            pieces = _rated(pieces, record.run_id)
        start = 0
        stream, session.stream = session.stream, None
        if stream is not None:
            lead = _settled_by_stream(pieces, stream)
            if lead and not receipts:
                with session.protected():
                    sent = await stream.finish([p.chunk for p in pieces[:lead] if p.chunk])
                ref = out.add(sent)
                if lead <= last:
                    await receipt(dict.fromkeys(range(lead), ref))
                else:
                    out.unreceipted = dict.fromkeys(range(lead), ref)
                start = lead
            else:  # a question is sent whole, with its buttons
                await stream.cancel(None)
        try:
            for index in range(start, len(pieces)):
                if index in receipts:
                    out.add_receipt(receipts[index])
                    continue
                if session.lost:  # no new piece on a lost lock: the next holder sends it
                    raise LockLost
                piece_target = target if index == 0 else replace(target, reply_to_id=None)
                with session.protected():  # a send under way is never cut off mid-request
                    sent = await self._send(session, piece_target, pieces[index])
                ref = out.add(sent)
                if index < last:
                    await receipt({index: ref})
                else:
                    out.unreceipted = {index: ref}
        except PlatformRateLimited:
            raise
        except PlatformError as exc:
            await self._say.notice(session.adapter, target, self._say.failure_text(exc))
        _log.info("reply.sent", messages=len(out.message_ids), resent=bool(receipts))
        return out

    async def _send(self, session: TurnSession, target: ReplyTarget, piece: Piece) -> SentRef:
        adapter = session.adapter
        if piece.kind == "chunk":
            assert piece.chunk is not None
            sent = await adapter.send(target, [piece.chunk])
            metrics.MESSAGES_OUT.labels(platform=str(target.platform)).inc(len(sent.message_ids))
            return sent
        if piece.kind == "question":
            assert piece.question is not None
            return await self._questions.ask(
                adapter, target, session.thread_id, piece.question, piece.chunks
            )
        return await self._file(adapter, target, piece)

    async def _file(self, adapter: Adapter, target: ReplyTarget, piece: Piece) -> SentRef:
        file = piece.file
        assert file is not None
        if not file.data and piece.file_size:  # too big to record, and its turn was interrupted
            text = f"I made {file.name or 'a file'} for you but lost it in a restart; please ask again."
            return await adapter.send(target, [Chunk(text=text, plain=text)])
        ids = await send_turn_files(adapter, target, [file], self._say)
        return SentRef(chat_id=target.chat_id, message_ids=tuple(ids))


def _rated(pieces: tuple[Piece, ...], run_id: str) -> tuple[Piece, ...]:
    """The answer's last reply chunk marked with its run, so the adapter puts the feedback
    buttons under it; an answer of no run (stopped, an error line) is not rated."""
    chunks = [i for i, p in enumerate(pieces) if p.kind == "chunk" and p.chunk is not None]
    if not run_id or not chunks:
        return pieces
    i = chunks[-1]
    chunk = pieces[i].chunk
    assert chunk is not None
    rated = replace(pieces[i], chunk=replace(chunk, vote_run=run_id))
    return (*pieces[:i], rated, *pieces[i + 1 :])


def _settled_by_stream(pieces: tuple[Piece, ...], stream: ReplyStream) -> int:
    """How many leading reply chunks the stream settles on: those its messages already show
    (at least the first), edited in place; any further chunk is a new message sent as a piece
    of its own, receipted before the next goes out. A stream settling on every chunk would
    send the new ones back to back with no receipt between them, so a worker killed in the
    middle of them left the whole lot to be sent again. A stream that shows no message yet
    (a Telegram draft) settles on the first chunk only."""
    lead = _leading_chunks(pieces)
    shown = len(getattr(stream, "message_ids", ()))  # messages that exist: edited, not sent
    return min(lead, max(1, shown))


def _leading_chunks(pieces: tuple[Piece, ...]) -> int:
    """How many pieces from the start are reply chunks (what a stream settles on)."""
    n = 0
    while n < len(pieces) and pieces[n].kind == "chunk":
        n += 1
    return n
