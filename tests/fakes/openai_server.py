"""A fake OpenAI-compatible chat server on 127.0.0.1 that the real `langchain-openai` client talks to.

It serves `POST /v1/chat/completions` like api.openai.com (and Ollama, vLLM, LM Studio): a JSON
completion, or server-sent event chunks when `stream` is true (tool-call deltas included, a usage
chunk when `stream_options.include_usage` asks for one). It checks what the real API checks and
the agent could get wrong: the bearer key (401 otherwise), and that every assistant tool call is
answered by a tool message and every tool message answers a call (400 otherwise, with OpenAI's
wording). Every request is recorded (body and headers). With `cost` set, every usage block also
carries `"cost": <USD>` the way OpenRouter reports what a call cost. With `delay` set, every
completion waits that many seconds before answering (without using CPU), as a real model takes
wall time (benchmarks use it). With `stream_error` set, a streamed answer breaks off after its
first piece of text with an error event (`data: {"error": {...}}`), as the API reports a failure
that happens once the response has started.

Its script, on the last message:
- a tool result -> "The tool said: <content>."
- a user message containing "time" while `current_time` is offered -> calls `current_time` ({})
- a user message starting with "choose" while `ask_clarification` is offered -> calls it with
  options alpha/beta/gamma
- a user message `use <tool> <json args>` while <tool> is offered -> calls it with those args
  (how tests make the model call an MCP tool)
- anything else -> "You said: <text>"
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["API_KEY", "FakeOpenAI", "Recorded"]

API_KEY = "sk-fake-openai-key-for-tests"


@dataclass(frozen=True, slots=True)
class Recorded:
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools", [])]


@dataclass
class FakeOpenAI:
    api_key: str = API_KEY
    requests: list[Recorded] = field(default_factory=list)
    base_url: str = ""
    cost: float | None = None  # OpenRouter-style `usage.cost` in USD on every response
    delay: float = 0.0  # seconds every completion waits before answering
    transcriptions: list[tuple[str, str, int]] = field(default_factory=list)  # model, name, size
    transcribe_status: int = 200  # what `/v1/audio/transcriptions` answers (500: it fails)
    write_s: float = 0.0  # seconds a reply takes to write: spread over its streamed chunks,
    # waited whole before a non-streamed answer (a model writes at its own pace either way)
    stream_error: str | None = None  # a streamed text answer breaks off with this error message
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Start serving; returns the base URL to give the client (ending in `/v1`)."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- the endpoint -------------------------------------------------------------------------

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(Recorded(body=body, headers=dict(request.headers)))
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        problem = _check_tool_pairs(body.get("messages", []))
        if problem:
            return _error(400, problem, None)
        text, calls = self._script(body)
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        if body.get("stream"):
            return await self._stream(request, body, text, calls)
        if self.write_s > 0:
            await asyncio.sleep(self.write_s)
        message: dict[str, Any] = {"role": "assistant", "content": text if not calls else None}
        if calls:
            message["tool_calls"] = calls
        return web.json_response(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls else "stop",
                        "logprobs": None,
                    }
                ],
                "usage": self._usage(body, text),
            }
        )

    async def _stream(
        self, request: web.Request, body: dict[str, Any], text: str, calls: list[dict[str, Any]]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunk_id = f"chatcmpl-{next(self._ids)}"

        async def send(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            chunk = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model", ""),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        if calls:
            for index, call in enumerate(calls):
                head = {"index": index, "id": call["id"], "type": "function"}
                head["function"] = {"name": call["function"]["name"], "arguments": ""}
                await send({"tool_calls": [head]})
                arguments = call["function"]["arguments"]
                for part in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                    await send({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        else:
            pieces = range(0, len(text), 8)
            for start in pieces:
                await send({"content": text[start : start + 8]})
                if self.stream_error is not None:
                    error = {"message": self.stream_error, "type": "server_error", "code": None}
                    await response.write(f"data: {json.dumps({'error': error})}\n\n".encode())
                    await response.write_eof()
                    return response
                if self.write_s > 0:
                    await asyncio.sleep(self.write_s / len(pieces))
        await send({}, "tool_calls" if calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model", ""),
                "choices": [],
                "usage": self._usage(body, text),
            }
            await response.write(f"data: {json.dumps(usage)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _transcriptions(self, request: web.Request) -> web.Response:
        """Speech to text the way OpenAI answers it: multipart `file` + `model`, `{"text"}` back.
        The "speech" of a test file is the UTF-8 text after its 4-byte magic number."""
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        form = await request.post()
        upload, model = form.get("file"), form.get("model")
        if not isinstance(upload, web.FileField) or not model:
            return _error(400, "file and model are required", None)
        data = upload.file.read()
        self.transcriptions.append((str(model), upload.filename or "", len(data)))
        if self.transcribe_status != 200:
            return _error(self.transcribe_status, "transcription failed", None)
        return web.json_response({"text": data[4:].decode("utf-8", errors="replace").strip()})

    # -- the script ---------------------------------------------------------------------------

    def _script(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        messages = body.get("messages", [])
        offered = {t["function"]["name"] for t in body.get("tools", [])}
        last = messages[-1] if messages else {"role": "user", "content": ""}
        if last["role"] == "tool":
            return f"The tool said: {_text(last.get('content'))}.", []
        said = next(
            (
                _text(m.get("content"))
                for m in reversed(messages)
                if m["role"] == "user" and m.get("name") != "loop_warning"
            ),
            "",
        )
        if "time" in said.lower() and "current_time" in offered:
            return "", [self._call("current_time", {})]
        if said.startswith("use "):
            name, _, raw_args = said[4:].strip().partition(" ")
            if name in offered:
                return "", [self._call(name, json.loads(raw_args or "{}"))]
        if said.lower().startswith("choose") and "ask_clarification" in offered:
            args = {
                "question": "Which one do you mean?",
                "options": ["alpha", "beta", "gamma"],
                "clarification_type": "approach_choice",
                "context": "I need one detail.",
            }
            return "", [self._call("ask_clarification", args)]
        return f"You said: {said}", []

    def _usage(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        usage: dict[str, Any] = _usage(body, text)
        if self.cost is not None:
            usage["cost"] = self.cost
        return usage

    def _call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"call_{next(self._ids)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _check_tool_pairs(messages: list[dict[str, Any]]) -> str | None:
    """OpenAI's own history rules for tool calls, with its wording."""
    open_ids: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_ids:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            open_ids.remove(message["tool_call_id"])
            continue
        if open_ids:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(open_ids)}"
            )
        if role == "assistant":
            open_ids = [c["id"] for c in message.get("tool_calls") or []]
    if open_ids:
        return f"The following tool_call_ids did not have response messages: {', '.join(open_ids)}"
    return None


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = sum(len(_text(m.get("content")).split()) for m in body.get("messages", []))
    completion = len(text.split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _error(status: int, message: str, code: str | None) -> web.Response:
    return web.json_response(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": code,
            }
        },
        status=status,
    )
