"""The local terminal channel: the same manager, Redis and agent as every platform.

One conversation per data dir (`console:local`) that survives restarts until `/new`. Clarification
options are shown numbered and answered by typing the number.

On a terminal the prompt is prompt_toolkit's, on the event loop: line editing and history (kept in
the data dir), no line-length limit (the tty's 4095-character canonical buffer is not used), and
keys handled at once: Ctrl-C or Ctrl-D at the prompt leave (status 0), Ctrl-C while an answer is
being written stops it (`/stop`). Piped input is read line by line in a daemon thread, so the
event loop (lock keeper, spinner) never blocks and leaving never waits for a blocked read.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

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
_CONSOLE_HELP = "/quit — leave the console (Ctrl-D too; Ctrl-C stops an answer in progress)\n"


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
        self._terminal = stdin is None and stdout is None and sys.stdin.isatty()
        self._data_dir: Path | None = None
        self._turn: asyncio.Future[None] | None = None
        self._stopping: asyncio.Future[None] | None = None
        self._reading: asyncio.Future[str | None] | None = None

    def use_data_dir(self, data_dir: Path) -> None:
        """Keep the prompt history in `data_dir` and name its `console.log` in the banner, so a
        failed answer ("ref …") can be looked up."""
        self._data_dir = data_dir

    async def start(self) -> None:
        self._write("Switchboard console — type a message, /help for commands, /quit to leave.\n")
        if self._data_dir is not None:
            self._write(f"(log: {self._data_dir / 'console.log'})\n")

    async def stop(self) -> None:
        return None

    async def run(self) -> None:
        """Read lines until EOF, /quit or Ctrl-C at the prompt; each line is handled to
        completion before the next."""
        prompt = self._prompt_session() if self._terminal else None
        while True:
            with _sigint_to(self._on_interrupt):
                read = self._prompt(prompt) if prompt else self._piped_line()
                self._reading = asyncio.ensure_future(read)
                try:
                    line = await self._reading
                except (EOFError, KeyboardInterrupt, asyncio.CancelledError):
                    line = None
            if line is None or line.strip().lower() in _EXIT:
                self._write("bye\n")
                return
            msg = to_inbound(line, session=self._session)
            if msg is not None:
                with _sigint_to(self._on_interrupt):
                    await self._answer(msg)
                if msg.text.lower() == "/help":
                    self._write(_CONSOLE_HELP)

    async def _answer(self, msg: InboundMessage) -> None:
        self._turn = asyncio.ensure_future(self._deliver(msg))
        keys = _ctrl_c_signals() if self._terminal else contextlib.nullcontext()
        try:
            with keys:
                await self._turn
                if self._stopping is not None:
                    await self._stopping
        finally:
            self._turn = self._stopping = None

    def _on_interrupt(self) -> None:
        """SIGINT: `/stop` the answer in progress (once); else leave, as Ctrl-C at the prompt
        does (a prompt takes the key itself only once its raw mode is on)."""
        turn = self._turn
        if turn is not None and not turn.done():
            stop = to_inbound("/stop", session=self._session)
            if self._stopping is None and stop is not None:
                self._write("\r\033[K(stopping…)\n" if self._spinner else "(stopping…)\n")
                self._stopping = asyncio.ensure_future(self._deliver(stop))
        elif self._reading is not None and not self._reading.done():
            self._reading.cancel()

    def _piped_line(self) -> asyncio.Future[str | None]:
        self._write(PROMPT)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str | None] = loop.create_future()

        def read() -> None:
            try:
                line: str | None = self._in.readline() or None
            except (OSError, ValueError):
                line = None
            loop.call_soon_threadsafe(_settle, future, line)

        threading.Thread(target=read, name="console-input", daemon=True).start()
        self._reading = future
        return future

    def _prompt_session(self) -> Any:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        history: Any = InMemoryHistory()
        if self._data_dir is not None:
            with contextlib.suppress(OSError):
                self._data_dir.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(self._data_dir / "console_history"))
        return PromptSession(history=history)

    async def _prompt(self, session: Any) -> str | None:
        # Ctrl-C at the prompt is a key (raw mode), raised as KeyboardInterrupt; prompt_toolkit's
        # own SIGINT handler would replace ours for good when it removes itself.
        return str(await session.prompt_async(PROMPT, handle_sigint=False))

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


def _settle(future: asyncio.Future[str | None], line: str | None) -> None:
    if not future.done():
        future.set_result(line)


@contextlib.contextmanager
def _ctrl_c_signals() -> Iterator[None]:
    """Between prompts the tty may still be in the prompt's raw mode, where Ctrl-C is just a
    byte; while an answer is written, let the tty turn it into SIGINT again."""
    import termios

    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (OSError, ValueError, termios.error):
        yield
        return
    cooked = list(saved)
    cooked[3] |= termios.ISIG
    termios.tcsetattr(fd, termios.TCSANOW, cooked)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


@contextlib.contextmanager
def _sigint_to(handler: Callable[[], None]) -> Iterator[None]:
    """Route SIGINT to `handler` for a while (main thread only; elsewhere nothing changes)."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
