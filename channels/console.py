"""The local terminal channel: the same manager, Redis and agent as every platform.

One conversation per data dir (`console:local`) that survives restarts until `/new`. Clarification
options are shown numbered and answered by typing the number. Input is read in a worker thread so
the event loop (lock keeper, spinner) never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TextIO

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

__all__ = ["LIMITS", "ConsoleAdapter", "to_inbound"]

LIMITS = Capabilities(
    max_len=20_000,
    len_unit="chars",
    markup=Markup.PLAIN,
    can_edit=False,
    buttons=False,
    reactions=False,
)
PROMPT = "you> "
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_EXIT = {"/quit", "/exit"}


def to_inbound(
    text: str, *, session: str = "local", user: str = "console"
) -> InboundMessage | None:
    """A typed line as a message; blank lines are nothing."""
    text = text.strip()
    if not text:
        return None
    return InboundMessage(
        platform=Platform.CONSOLE,
        workspace_id="",
        chat_id=session,
        sender_id=user,
        sender_name=user,
        text=text,
        provider_message_id=uuid.uuid4().hex,
        is_dm=True,
        mentions_bot=True,
    )


class ConsoleAdapter:
    platform = Platform.CONSOLE
    capabilities = LIMITS

    def __init__(
        self,
        *,
        deliver: Deliver,
        session: str = "local",
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        spinner: bool = True,
    ) -> None:
        self._deliver = deliver
        self._session = session
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stdout
        self._spinner = spinner and self._out.isatty()
        self._ids = itertools.count(1)

    async def start(self) -> None:
        self._write("Switchboard console — type a message, /help for commands, /quit to leave.\n")

    async def stop(self) -> None:
        return None

    async def run(self) -> None:
        """Read lines until EOF or /quit; each line is handled to completion before the next."""
        while True:
            line = await asyncio.to_thread(self._read_line)
            if line is None or line.strip().lower() in _EXIT:
                self._write("bye\n")
                return
            msg = to_inbound(line, session=self._session)
            if msg is not None:
                await self._deliver(msg)

    def _read_line(self) -> str | None:
        self._write(PROMPT)
        line = self._in.readline()
        return line if line else None

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    async def send(self, target: ReplyTarget, chunks: Sequence[Chunk]) -> SentRef:
        ids = []
        for chunk in chunks:
            self._write(f"bot> {chunk.text}\n")
            ids.append(str(next(self._ids)))
        return SentRef(target.chat_id, tuple(ids))

    async def ask(
        self, target: ReplyTarget, chunks: Sequence[Chunk], prompt: QuestionPrompt
    ) -> SentRef:
        sent = await self.send(target, chunks)
        self._write("(answer with a number or your own words)\n")
        return sent

    async def edit(self, target: ReplyTarget, message_id: str, chunk: Chunk) -> None:
        return None

    async def acknowledge(self, msg: InboundMessage, kind: AckKind) -> None:
        if kind is AckKind.QUEUED:
            self._write("(queued: I'll answer after the current reply)\n")

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        if not self._spinner:
            self._write("… thinking\n")
            yield
            return
        task = asyncio.create_task(self._spin())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self._write("\r\033[K")

    async def _spin(self) -> None:
        for frame in itertools.cycle(_SPINNER):
            self._write(f"\r{frame} thinking…")
            await asyncio.sleep(0.1)

    async def notify(self, msg: InboundMessage, text: str, *, private: bool = False) -> None:
        self._write(f"bot> {text}\n")

    async def answer_button(self, msg: InboundMessage, notice: str | None) -> None:
        return None

    async def is_workspace_admin(self, msg: InboundMessage) -> bool:
        return True
