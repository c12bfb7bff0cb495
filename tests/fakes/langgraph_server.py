"""A loopback LangGraph server that records every request's headers and answers each run with
one assistant message: the smallest server `langgraph-sdk` (and so `RemoteGraphRunner`) can run a
turn against. Tests read `headers` to see what a remote agent is sent (an `x-api-key`, say).

Wire format as the SDK reads it: `POST /threads` returns `{"thread_id"}`; `POST
/threads/{id}/runs/stream` is an SSE stream of `metadata` (`run_id`), `values` (the state's
`messages`) and `end`.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["REPLY", "FakeLangGraph"]

REPLY = "hello from the remote agent"


@dataclass
class FakeLangGraph:
    headers: list[dict[str, str]] = field(default_factory=list)  # every request's, lower-cased
    base_url: str = ""
    _runner: web.AppRunner | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def start(self) -> str:
        app = web.Application(middlewares=[self._record])
        app.router.add_post("/threads", self._thread)
        app.router.add_post("/threads/{thread}/runs/stream", self._stream)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def api_keys(self) -> list[str | None]:
        return [h.get("x-api-key") for h in self.headers]

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        response: web.StreamResponse = await handler(request)
        return response

    async def _thread(self, request: web.Request) -> web.Response:
        return web.json_response({"thread_id": f"thread-{next(self._ids)}", "metadata": {}})

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        said = (body.get("input") or {}).get("messages") or []
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        state = {"messages": [*said, {"type": "ai", "content": REPLY, "id": "ai-1"}]}
        for event, data in (
            ("metadata", {"run_id": f"run-{next(self._ids)}"}),
            ("values", state),
            ("end", None),
        ):
            await response.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        await response.write_eof()
        return response
