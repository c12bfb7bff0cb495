"""A TCP proxy on 127.0.0.1 that can lose a server's reply: the fault a client sees when the
network drops a connection after the server acted on a command but before the answer arrived.

`drop_reply(n)` arms it: the n-th chunk the server sends after arming (on any connection) is
swallowed and that connection is cut on both sides, so the client gets a connection error for a
command the server did run. `cut_requests(marker)` cuts every connection on which the client
sends bytes containing `marker`, before the server sees them (the command never runs: a network
that fails one kind of request every time). `go_down()` / `come_up()` close every connection and
refuse new ones meanwhile: the server is unreachable. Everything else is forwarded byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

__all__ = ["TcpProxy"]


@dataclass
class TcpProxy:
    target_host: str
    target_port: int
    port: int = 0
    dropped: int = 0
    replies: int = 0  # server chunks forwarded since the last arming
    cuts: int = 0  # connections cut by `cut_requests`
    requests: int = 0  # client chunks forwarded: a round trip each (a pipeline is written at once)
    _countdown: int = 0
    _marker: bytes = b""
    _down: bool = False
    _server: asyncio.Server | None = None
    _pipes: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def armed(self) -> int:
        """Server chunks still to pass before the drop (0 = nothing armed)."""
        return self._countdown

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    def drop_reply(self, nth: int) -> None:
        """Lose the `nth` server chunk from now on (1 = the very next one)."""
        self._countdown = nth
        self.replies = 0

    def cut_requests(self, marker: bytes) -> None:
        """Cut any connection whose client sends `marker` (b"" = stop cutting)."""
        self._marker = marker

    def go_down(self) -> None:
        """Close every connection and refuse new ones until `come_up`."""
        self._down = True
        for task in list(self._pipes):
            task.cancel()

    def come_up(self) -> None:
        self._down = False

    def count_replies(self) -> None:
        """Start counting forwarded server chunks, dropping nothing."""
        self._countdown = 0
        self.replies = 0

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self._down:
            client_w.close()
            return
        try:
            server_r, server_w = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            client_w.close()
            return
        up = asyncio.create_task(self._pipe(client_r, server_w, client_w, from_server=False))
        down = asyncio.create_task(self._pipe(server_r, client_w, server_w, from_server=True))
        for task in (up, down):
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        other: asyncio.StreamWriter,
        *,
        from_server: bool,
    ) -> None:
        try:
            while chunk := await reader.read(65536):
                if not from_server:
                    if self._marker and self._marker in chunk:
                        self.cuts += 1
                        break  # the request never reaches the server
                    self.requests += 1
                if from_server:
                    if self._countdown:
                        self._countdown -= 1
                        if self._countdown == 0:
                            self.dropped += 1
                            break  # the server ran it; the client never hears back
                    self.replies += 1
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for w in (writer, other):
                with contextlib.suppress(Exception):
                    w.close()
