"""The local terminal channel: the same manager, Redis and agent as every platform.

One conversation per data dir (`console:local`) that survives restarts until `/new`. Clarification
options are shown numbered and answered by typing the number.

On a terminal the prompt is prompt_toolkit's, on the event loop: line editing and history (kept in
the data dir), no line-length limit (the tty's 4095-character canonical buffer is not used), and
keys handled at once: Ctrl-C or Ctrl-D at the prompt leave (status 0), Ctrl-C while an answer is
being written stops it (`/stop`). Piped input is read line by line in a daemon thread, so the
event loop (lock keeper, spinner) never blocks and leaving never waits for a blocked read.

A streamed reply is printed as it is written: each update prints only what its plain rendering
adds to what is on screen, so the finished line reads exactly as `send` would have printed it.
A line whose markup may still change (an open `**`, a link, a heading) is held back until it is
complete; nothing printed is ever taken back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
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
    ReplyStream,
    SentRef,
)
from channels.message import InboundMessage, Platform, ReplyTarget
from channels.render import render_chunks

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
_UNSETTLED = re.compile(r"[*_`~\[\]()<>\\#|]")  # markup whose rendering may still change
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


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
        self._live = False  # a streamed reply's line is open (the spinner keeps off it)

    def use_data_dir(self, data_dir: Path) -> None:
        """Keep the prompt history in `data_dir` and name its `console.log` in the banner, so a
        failed answer ("ref …") can be looked up."""
        self._data_dir = data_dir

    async def start(self, *, receive: bool = True) -> None:
        """`receive` changes nothing: the console reads its terminal in `run()`."""
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

    def open_stream(self, target: ReplyTarget) -> ReplyStream:
        """Tokens printed as they arrive, on the `bot> ` line `send` would have printed."""
        return _ConsoleStream(self, target)

    def _stream_line(self, open_: bool) -> None:
        if open_ and not self._live and self._spinner:
            self._write("\r\033[K")  # the spinner's line becomes the reply's
        self._live = open_

    def _next_id(self) -> str:
        return str(next(self._ids))

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
        elif kind is AckKind.STEERED:
            self._write("(taken into the answer I'm writing)\n")

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
            if not self._live:
                self._write("\r\033[K")

    async def _spin(self) -> None:
        for frame in itertools.cycle(_SPINNER):
            if not self._live:
                self._write(f"\r{frame} thinking…")
            await asyncio.sleep(0.1)

    async def notify(self, msg: InboundMessage, text: str, *, private: bool = False) -> bool:
        self._write(f"bot> {text}\n")  # the terminal is its one person's own
        return True

    async def answer_button(self, msg: InboundMessage, notice: str | None) -> None:
        return None

    async def is_workspace_admin(self, msg: InboundMessage) -> bool:
        return True


class _ConsoleStream:
    """One streamed reply on the console (see the module docstring)."""

    def __init__(self, console: ConsoleAdapter, target: ReplyTarget) -> None:
        self._console = console
        self._target = target
        self._printed = ""  # the part of the reply's first line(s) already on screen
        self._status_shown = False

    async def update(self, text: str) -> None:
        shown = _settled(text)
        if len(shown) <= len(self._printed) or not shown.startswith(self._printed):
            return
        if not self._printed:
            self._console._stream_line(True)
            self._console._write("bot> ")
        self._console._write(shown[len(self._printed) :])
        self._printed = shown

    async def status(self, line: str) -> None:
        """Shown once, before any text (printed text cannot be replaced on a terminal)."""
        if self._printed or self._status_shown:
            return
        self._status_shown = True
        self._console._write(f"… {line}\n")

    async def finish(self, chunks: Sequence[Chunk]) -> SentRef:
        rest = list(chunks)
        if self._printed:
            if rest and rest[0].text.startswith(self._printed):
                self._console._write(rest.pop(0).text[len(self._printed) :] + "\n")
                ids = [self._console._next_id()]
            else:  # cannot happen for text the model only added to; say it all again
                self._console._write("\n")
                ids = []
            self._console._stream_line(False)
        else:
            ids = []
        sent = await self._console.send(self._target, rest)
        return SentRef(self._target.chat_id, (*ids, *sent.message_ids))

    async def cancel(self, note: str | None = None) -> SentRef | None:
        if not self._printed:
            return None
        self._console._write((f" {note}" if note else "") + "\n")
        self._console._stream_line(False)
        return SentRef(self._target.chat_id, (self._console._next_id(),)) if note else None


def _settled(text: str) -> str:
    """The plain rendering of the reply so far, without a last line whose markup may still
    render differently once more is written (or the fence an open code block is closed with)."""
    chunks = render_chunks(text, LIMITS) if text.strip() else []
    if not chunks:
        return ""
    shown = chunks[0].text
    last_raw = text.rsplit("\n", 1)[-1]
    if _UNSETTLED.search(last_raw) or len(_FENCE.findall(text)) % 2:
        cut = shown.rfind("\n")
        shown = shown[:cut] if cut >= 0 else ""
    return shown.rstrip()


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
