"""An in-memory adapter that implements `channels.base.Adapter` and records everything.

It stands in for a platform in manager tests: it is the far side of the adapter seam, so the
manager, storage and agent under test are all real.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from channels.adapter import (
    AckKind,
    Capabilities,
    Chunk,
    Deliver,
    Markup,
    QuestionPrompt,
    SentRef,
)
from channels.message import InboundMessage, Platform, ReplyTarget

__all__ = ["RecordingAdapter", "Sent"]

DEFAULT_CAPS = Capabilities(max_len=4000, len_unit="chars", markup=Markup.PLAIN)


@dataclass(frozen=True, slots=True)
class Sent:
    target: ReplyTarget
    text: str
    message_id: str
    prompt: QuestionPrompt | None = None


@dataclass
class RecordingAdapter:
    platform: Platform = Platform.SLACK
    capabilities: Capabilities = DEFAULT_CAPS
    deliver: Deliver | None = None
    admins: set[str] = field(default_factory=set)
    sent: list[Sent] = field(default_factory=list)
    edits: list[tuple[str, str]] = field(default_factory=list)
    acks: list[tuple[str, AckKind]] = field(default_factory=list)
    notices: list[tuple[str, str, bool]] = field(default_factory=list)
    button_answers: list[tuple[str, str | None]] = field(default_factory=list)
    typing_count: int = 0
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1000))

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, target: ReplyTarget, chunks: Sequence[Chunk]) -> SentRef:
        ids = []
        for chunk in chunks:
            mid = str(next(self._ids))
            self.sent.append(Sent(target, chunk.text, mid))
            ids.append(mid)
        return SentRef(target.chat_id, tuple(ids))

    async def ask(
        self, target: ReplyTarget, chunks: Sequence[Chunk], prompt: QuestionPrompt
    ) -> SentRef:
        ids = []
        for i, chunk in enumerate(chunks):
            mid = str(next(self._ids))
            last = i == len(chunks) - 1
            self.sent.append(Sent(target, chunk.text, mid, prompt if last else None))
            ids.append(mid)
        return SentRef(target.chat_id, tuple(ids))

    async def edit(self, target: ReplyTarget, message_id: str, chunk: Chunk) -> None:
        self.edits.append((message_id, chunk.text))

    async def acknowledge(self, msg: InboundMessage, kind: AckKind) -> None:
        self.acks.append((msg.provider_message_id, kind))

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        self.typing_count += 1
        yield

    async def notify(self, msg: InboundMessage, text: str, *, private: bool = False) -> bool:
        self.notices.append((msg.sender_id, text, private))
        return True

    async def answer_button(self, msg: InboundMessage, notice: str | None) -> None:
        self.button_answers.append((msg.sender_id, notice))

    async def is_workspace_admin(self, msg: InboundMessage) -> bool:
        return msg.sender_id in self.admins

    # -- test conveniences -----------------------------------------------------------------

    def texts(self) -> list[str]:
        return [s.text for s in self.sent]

    def last_prompt(self) -> Sent | None:
        return next((s for s in reversed(self.sent) if s.prompt is not None), None)
