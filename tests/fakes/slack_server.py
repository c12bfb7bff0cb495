"""A fake Slack on 127.0.0.1: the Web API methods the adapter calls, and a Socket Mode websocket.

The real `AsyncWebClient` (base_url = `api_base`) and slack-bolt's Socket Mode client talk to it
over the wire, in Slack's own JSON shapes. Every Web API call is recorded (`calls`, `calls_to`);
`fail_next` makes the next N calls of a method answer 429 with `Retry-After`; `drop_reply` makes
the next N calls of a method run (recorded, and acted on) and then cuts the connection without an
answer, as a network that loses Slack's response does. The websocket sends
`hello` on connect; `push_event` / `push_action` send envelopes and `wait_ack` waits for the
client's ack of one. `signed_headers` builds Events API request headers the way Slack signs them.

History: the people's messages Slack holds (`add_message`, and every message event pushed) are
read back by `conversations.history` (a channel's top level, newest first) and
`conversations.replies` (a thread, parent first, paged from its oldest by `cursor`), with
`latest` / `oldest` / `inclusive` as Slack applies them; `page_cap` lowers `limit` the way Slack
does for apps outside its Marketplace (15). `refuse(method, error)` answers a method with an
error (`missing_scope` names the scope, as Slack's does) until `allow(method)`; `stall(method,
seconds)` holds its next call that long. `users.info` answers with a `profile`.

Slash commands: `slash_command(...)` builds the payload Slack sends for one (the form fields of
an HTTP request, or the JSON of a Socket Mode `slash_commands` envelope: `push_command`), with a
`response_url` served here: it takes JSON `{"text", "response_type"}` (ephemeral by default), at
most 5 answers within 30 minutes (`expire_responses()` ages them all), and keeps each answer in
`responses`.

Streaming: `chat.startStream` / `chat.appendStream` / `chat.stopStream` keep each streamed
message's markdown in `messages` (by channel and ts; posts, updates and deletes are kept there
too). Outside DMs a stream needs `recipient_user_id` and `recipient_team_id`, as Slack's does;
`refuse_streaming = "feature_not_enabled"` (or any error code) refuses every stream start.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

__all__ = ["ApiCall", "FakeSlack", "signed_headers"]


@dataclass(frozen=True, slots=True)
class ApiCall:
    method: str
    params: dict[str, Any]
    token: str
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic, compare=False)  # when it was answered


def signed_headers(
    secret: str, body: bytes | str, *, timestamp: int | None = None, retry_num: int | None = None
) -> dict[str, str]:
    """Headers of an Events API request signed like Slack does (v0 HMAC-SHA256)."""
    raw = body.decode() if isinstance(body, bytes) else body
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{raw}".encode(), hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}
    if retry_num is not None:
        headers["X-Slack-Retry-Num"] = str(retry_num)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    return headers


@dataclass
class FakeSlack:
    bot_token: str = "xoxb-fake-bot-token"
    app_token: str = "xapp-fake-app-token"
    team_id: str = "T0FAKE"
    bot_user_id: str = "UBOT"
    bot_id: str = "BBOT"
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[ApiCall] = field(default_factory=list)
    acks: dict[str, dict[str, Any]] = field(default_factory=dict)
    connections: int = 0
    refuse_streaming: str | None = None  # an error code for every chat.startStream
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _failures: dict[str, list[int]] = field(default_factory=dict)
    _drops: dict[str, int] = field(default_factory=dict)
    _reactions: set[tuple[str, str, str]] = field(default_factory=set)
    _ts: itertools.count = field(default_factory=lambda: itertools.count(1))
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    _ack_events: dict[str, asyncio.Event] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    port: int = 0
    files: dict[str, bytes] = field(default_factory=dict)  # shared by users, by file id
    downloads: list[str] = field(default_factory=list)  # file ids fetched with the bot token
    file_infos: dict[str, dict[str, Any]] = field(default_factory=dict)  # files.info answers
    # the AI-app pane: assistant threads (channel, thread_ts) opened by users, each one's
    # status (cleared when the app replies in it, as Slack does) and every status set, titles,
    # suggested prompts offered and App Home views published (by user)
    assistant_threads: set[tuple[str, str]] = field(default_factory=set)
    statuses: dict[tuple[str, str], str] = field(default_factory=dict)
    status_history: list[tuple[str, str, str]] = field(default_factory=list)
    titles: dict[tuple[str, str], str] = field(default_factory=dict)
    homes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # an app declared as an agent: agent sessions per thread (status, title) and every status set;
    # an app that is not one is refused agents.sessions.* (as Slack does)
    agent_app: bool = False
    sessions: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    session_history: list[tuple[str, str, str]] = field(default_factory=list)
    uploads: list[dict[str, Any]] = field(default_factory=list)  # completed files_upload_v2
    _upload_urls: dict[str, str] = field(default_factory=dict)  # upload file id -> filename
    _uploaded: dict[str, bytes] = field(default_factory=dict)
    responses: list[dict[str, Any]] = field(default_factory=list)  # answers to response_urls
    _response_urls: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> command
    history: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # people's
    page_cap: int = 1000  # the most `limit` Slack grants a history page
    _refusals: dict[str, str] = field(default_factory=dict)  # method -> error code
    _stalls: dict[str, float] = field(default_factory=dict)  # method -> seconds, next call

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/socket-mode", self._socket)
        app.router.add_get("/files-pri/{file_id}/{name}", self._file_download)
        app.router.add_post("/upload/{file_id}", self._file_upload)
        app.router.add_post("/commands/{team}/{serial}/{key}", self._command_response)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # -- files (url_private with the bot token; files_upload_v2's three steps) ---------------

    def add_file(self, name: str, data: bytes, mimetype: str, *, size: int | None = None) -> dict:
        """A file shared by a user, as it appears in an event's `files` list."""
        file_id = f"F{len(self.files) + 1:05d}"
        self.files[file_id] = data
        return {
            "id": file_id,
            "name": name,
            "mimetype": mimetype,
            "size": len(data) if size is None else size,
            "url_private": f"http://127.0.0.1:{self.port}/files-pri/{file_id}/{name}",
        }

    def add_connect_file(self, name: str, data: bytes, mimetype: str) -> dict:
        """A file shared from another organisation over Slack Connect, as the event lists it:
        a stub with only its id; `files.info` describes it."""
        shared = self.add_file(name, data, mimetype)
        self.file_infos[shared["id"]] = shared
        return {
            "id": shared["id"],
            "mode": "file_access",
            "file_access": "check_file_info",
            "created": 0,
            "timestamp": 0,
            "user": "",
        }

    def _m_files_info(self, params: dict[str, Any]) -> dict[str, Any]:
        info = self.file_infos.get(str(params.get("file") or ""))
        if info is None:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "file": info, "comments": [], "response_metadata": {"next_cursor": ""}}

    async def _file_download(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        if auth != f"Bearer {self.bot_token}":  # Slack sends the login page instead
            return web.Response(status=302, headers={"Location": "https://fake.slack.com/"})
        data = self.files.get(request.match_info["file_id"])
        if data is None:
            return web.Response(status=404)
        self.downloads.append(request.match_info["file_id"])
        return web.Response(body=data, content_type="application/octet-stream")

    async def _file_upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self._upload_urls:
            return web.Response(status=404)
        self._uploaded[file_id] = await request.read()
        return web.Response(text=f"OK - {len(self._uploaded[file_id])}")

    def _m_files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("filename") or not str(params.get("length", "")).isdigit():
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"FU{len(self._upload_urls) + 1:04d}"
        self._upload_urls[file_id] = str(params["filename"])
        return {
            "ok": True,
            "upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}",
            "file_id": file_id,
        }

    def _m_files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        entries = params.get("files")
        entries = json.loads(entries) if isinstance(entries, str) else entries or []
        done = []
        for entry in entries:
            file_id = entry.get("id")
            if file_id not in self._uploaded:
                return {"ok": False, "error": "file_not_found"}
            self.uploads.append(
                {
                    "file_id": file_id,
                    "filename": self._upload_urls[file_id],
                    "title": entry.get("title"),
                    "data": self._uploaded[file_id],
                    "channel": params.get("channel_id"),
                    "thread_ts": params.get("thread_ts"),
                }
            )
            done.append({"id": file_id, "title": entry.get("title")})
        return {"ok": True, "files": done}

    # -- test controls -----------------------------------------------------------------------

    def add_user(
        self, user_id: str, name: str, *, admin: bool = False, owner: bool = False
    ) -> None:
        self.users[user_id] = {
            "id": user_id,
            "team_id": self.team_id,
            "name": name,
            "real_name": name.title(),
            "is_admin": admin,
            "is_owner": owner,
            "is_primary_owner": False,
            "is_bot": False,
            "profile": {"display_name": name.title(), "real_name": name.title()},
        }

    def add_message(
        self,
        channel: str,
        user: str,
        text: str,
        *,
        ts: str | None = None,
        thread_ts: str | None = None,
        files: list[dict[str, Any]] | None = None,
        bot_name: str | None = None,
    ) -> dict[str, Any]:
        """A message Slack holds (posted earlier, its event not pushed); returns it. With
        `bot_name` it is another app's message (`bot_id`, `bot_profile`, no `user`)."""
        ts = ts or self.next_ts()
        message: dict[str, Any] = {"type": "message", "text": text, "ts": ts, "team": self.team_id}
        if bot_name is not None:
            message.update(
                subtype="bot_message",
                bot_id=f"B{bot_name.upper()}",
                bot_profile={"id": f"B{bot_name.upper()}", "name": bot_name},
            )
        else:
            message["user"] = user
        if thread_ts:
            message["thread_ts"] = thread_ts
            if thread_ts != ts:
                message["parent_user_id"] = self._author(channel, thread_ts)
        if files:
            message["files"] = files
        self.history[(channel, ts)] = message
        return message

    def refuse(self, method: str, error: str = "missing_scope") -> None:
        """Answer every call of `method` with `{"ok": false, "error": error}` (until `allow`)."""
        self._refusals[method] = error

    def allow(self, method: str) -> None:
        self._refusals.pop(method, None)

    def stall(self, method: str, seconds: float) -> None:
        """Hold the next call of `method` for `seconds` before answering it."""
        self._stalls[method] = seconds

    def _author(self, channel: str, ts: str) -> str:
        found = self.history.get((channel, ts)) or self.messages.get((channel, ts)) or {}
        return str(found.get("user") or "")

    def _remember_event(self, event: dict[str, Any]) -> None:
        """A pushed message event: Slack holds the message too (history reads find it)."""
        if event.get("type") not in ("message", "app_mention") or event.get("channel_type") == "im":
            return
        if event.get("subtype") not in (None, "file_share", "thread_broadcast"):
            return
        channel, ts = event.get("channel"), event.get("ts")
        if not channel or not ts or (channel, ts) in self.history:
            return
        stored = {
            k: v for k, v in event.items() if k not in ("event_ts", "channel", "channel_type")
        }
        self.history[(str(channel), str(ts))] = {**stored, "type": "message"}

    def fail_next(self, method: str, *, times: int = 1, retry_after: int = 0) -> None:
        """The next `times` calls of `method` get HTTP 429 with `Retry-After: retry_after`."""
        self._failures.setdefault(method, []).extend([retry_after] * times)

    def forget_failures(self) -> None:
        """The 429s `fail_next` still has in store are not sent."""
        self._failures.clear()

    def drop_reply(self, method: str, *, times: int = 1) -> None:
        """The next `times` calls of `method` are carried out, then their connection is cut
        before the response is sent: the caller cannot tell whether Slack accepted them."""
        self._drops[method] = self._drops.get(method, 0) + times

    def calls_to(self, method: str, *, ok_only: bool = True) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method and (c.status == 200 or not ok_only)]

    def posted_texts(self) -> list[str]:
        return [str(c.params.get("text", "")) for c in self.calls_to("chat.postMessage")]

    def next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"

    # -- Socket Mode -------------------------------------------------------------------------

    @property
    def socket_connected(self) -> bool:
        return any(not ws.closed for ws in self._sockets)

    async def push(self, kind: str, payload: dict[str, Any], **extra: Any) -> str:
        """Send one envelope over the open socket; returns its envelope_id."""
        envelope_id = str(uuid.uuid4())
        self._ack_events[envelope_id] = asyncio.Event()
        if kind == "events_api":
            self._remember_event(payload.get("event") or {})
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            **extra,
        }
        ws = next(ws for ws in reversed(self._sockets) if not ws.closed)
        await ws.send_str(json.dumps(envelope))
        return envelope_id

    async def request_refresh(self) -> None:
        """Ask the client to reconnect, as Slack does every few hours."""
        ws = next(ws for ws in reversed(self._sockets) if not ws.closed)
        await ws.send_str(json.dumps({"type": "disconnect", "reason": "refresh_requested"}))

    async def push_event(
        self, event: dict[str, Any], *, event_id: str | None = None, retry_attempt: int = 0
    ) -> str:
        return await self.push(
            "events_api",
            self.event_callback(event, event_id=event_id),
            retry_attempt=retry_attempt,
            retry_reason="timeout" if retry_attempt else "",
        )

    async def push_action(self, payload: dict[str, Any]) -> str:
        return await self.push("interactive", payload)

    async def push_command(self, payload: dict[str, Any]) -> str:
        """A slash command over Socket Mode (its ack may carry a response payload)."""
        return await self.push("slash_commands", payload)

    def expire_responses(self) -> None:
        """Every response_url handed out so far is past its 30 minutes."""
        for entry in self._response_urls.values():
            entry["expired"] = True

    def responses_to(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """The answers sent to one slash command's response_url, oldest first."""
        return [r for r in self.responses if r["trigger_id"] == payload["trigger_id"]]

    async def wait_ack(self, envelope_id: str, timeout: float = 5.0) -> dict[str, Any]:
        await asyncio.wait_for(self._ack_events[envelope_id].wait(), timeout)
        return self.acks[envelope_id]

    # -- payload builders (Slack's shapes) ---------------------------------------------------

    def event_callback(self, event: dict[str, Any], *, event_id: str | None = None) -> dict:
        return {
            "token": "verification-token",
            "team_id": self.team_id,
            "api_app_id": "AFAKE",
            "event": {"event_ts": event.get("ts", ""), **event},
            "type": "event_callback",
            "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
            "event_time": int(time.time()),
            "authorizations": [
                {
                    "team_id": self.team_id,
                    "user_id": self.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
        }

    def slash_command(
        self,
        text: str = "",
        *,
        user_id: str = "U1",
        channel: str = "C1",
        command: str = "/switchboard",
    ) -> dict[str, str]:
        """What Slack sends for `command text` typed by `user_id` in `channel` (a `D…` channel
        is a DM): form fields over HTTP, a JSON object over Socket Mode."""
        serial = str(next(self._ts))
        key = uuid.uuid4().hex[:24]
        trigger = f"{serial}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:16]}"
        self._response_urls[key] = {"trigger_id": trigger, "uses": 0, "expired": False}
        user = self.users.get(user_id, {})
        return {
            "token": "verification-token",
            "team_id": self.team_id,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": "directmessage" if channel.startswith("D") else "general",
            "user_id": user_id,
            "user_name": str(user.get("name") or user_id.lower()),
            "command": command,
            "text": text,
            "api_app_id": "AFAKE",
            "is_enterprise_install": "false",
            "response_url": f"http://127.0.0.1:{self.port}/commands/{self.team_id}/{serial}/{key}",
            "trigger_id": trigger,
        }

    def block_action(
        self,
        *,
        user_id: str,
        channel: str,
        message_ts: str,
        action_id: str,
        label: str,
        thread_ts: str | None = None,
    ) -> dict[str, Any]:
        container: dict[str, Any] = {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": False,
        }
        message: dict[str, Any] = {"type": "message", "ts": message_ts, "bot_id": self.bot_id}
        if thread_ts:
            container["thread_ts"] = thread_ts
            message["thread_ts"] = thread_ts
        return {
            "type": "block_actions",
            "user": {"id": user_id, "username": user_id.lower(), "team_id": self.team_id},
            "api_app_id": "AFAKE",
            "token": "verification-token",
            "container": container,
            "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:8]}",
            "team": {"id": self.team_id, "domain": "fake"},
            "channel": {"id": channel, "name": "directmessage" if channel[0] == "D" else "c"},
            "message": message,
            "response_url": f"http://127.0.0.1:{self.port}/response-url",
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "q",
                    "text": {"type": "plain_text", "text": label},
                    "value": action_id,
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }

    def feedback_action(
        self,
        *,
        user_id: str,
        channel: str,
        message_ts: str,
        value: str,
        thread_ts: str | None = None,
    ) -> dict[str, Any]:
        """A press on a `feedback_buttons` element (a `context_actions` block) under a bot
        message: Slack sends the pressed button's `value` in a `block_actions` payload."""
        payload = self.block_action(
            user_id=user_id,
            channel=channel,
            message_ts=message_ts,
            action_id="",
            label="",
            thread_ts=thread_ts,
        )
        stored = self.messages.get((channel, message_ts)) or {}
        element = next(
            (
                e
                for b in stored.get("blocks") or ()
                if b.get("type") == "context_actions"
                for e in b.get("elements") or ()
                if e.get("type") == "feedback_buttons"
            ),
            {},
        )
        payload["actions"] = [
            {
                "type": "feedback_buttons",
                "action_id": element.get("action_id", ""),
                "block_id": "fb",
                "value": value,
                "action_ts": f"{time.time():.6f}",
            }
        ]
        return payload

    # -- handlers ----------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        self.connections += 1
        await ws.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "debug_info": {"host": "fake", "approximate_connection_time": 3600},
                    "connection_info": {"app_id": "AFAKE"},
                }
            )
        )
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            data = json.loads(frame.data)
            envelope_id = data.get("envelope_id")
            if envelope_id:
                self.acks[envelope_id] = data
                event = self._ack_events.setdefault(envelope_id, asyncio.Event())
                event.set()
        return ws

    async def _command_response(self, request: web.Request) -> web.Response:
        """A slash command's response_url, answering the way Slack's does (plain-text errors)."""
        entry = self._response_urls.get(request.match_info["key"])
        if entry is None:
            return web.Response(status=404, text="invalid_url")
        if entry["expired"]:
            return web.Response(status=404, text="expired_url")
        if entry["uses"] >= 5:
            return web.Response(status=404, text="used_url")
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        if not body.get("text") and not body.get("blocks"):
            return web.Response(status=400, text="no_text")
        entry["uses"] += 1
        self.responses.append(
            {
                "trigger_id": entry["trigger_id"],
                "response_type": body.get("response_type") or "ephemeral",
                "text": body.get("text", ""),
            }
        )
        return web.Response(text="ok")

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.body_exists:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(await request.post())
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""
        token = token or str(params.pop("token", ""))
        pending = self._failures.get(method)
        if pending:
            retry_after = pending.pop(0)
            self.calls.append(ApiCall(method, params, token, status=429))
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(retry_after)},
            )
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        stall = self._stalls.pop(method, None)
        if stall:
            await asyncio.sleep(stall)
        if token != expected:
            body: dict[str, Any] = {"ok": False, "error": "invalid_auth"}
        elif method in self._refusals:
            body = {"ok": False, "error": self._refusals[method]}
            if body["error"] == "missing_scope":
                body.update(needed="channels:history,groups:history", provided="chat:write")
        elif handler is None:
            body = {"ok": False, "error": "unknown_method"}
        else:
            body = handler(params)
        self.calls.append(ApiCall(method, params, token, response=body))
        if self._drops.get(method):
            self._drops[method] -= 1
            assert request.transport is not None
            request.transport.abort()
        return web.json_response(body)

    def _m_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.com/",
            "team": "Fake Team",
            "user": "switchboard",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket-mode"}

    def _m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if len(str(params.get("text", ""))) > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        ts = self.next_ts()
        message = {"type": "message", "text": params.get("text", ""), "ts": ts}
        message.update(user=self.bot_user_id, bot_id=self.bot_id)
        if params.get("thread_ts"):
            message["thread_ts"] = params["thread_ts"]
        if params.get("blocks"):
            message["blocks"] = _blocks(params["blocks"])
        self.messages[(str(params["channel"]), ts)] = dict(message)
        self.statuses.pop((str(params["channel"]), str(params.get("thread_ts") or "")), None)
        return {"ok": True, "channel": params["channel"], "ts": ts, "message": message}

    def open_assistant_thread(self, user_id: str, channel: str = "D1") -> dict[str, Any]:
        """A user opens the app's assistant pane: a new thread in their DM with the app, and
        the `assistant_thread_started` event Slack sends for it."""
        thread_ts = self.next_ts()
        self.assistant_threads.add((channel, thread_ts))
        return {
            "type": "assistant_thread_started",
            "assistant_thread": {
                "user_id": user_id,
                "context": {"channel_id": "", "team_id": self.team_id, "enterprise_id": ""},
                "channel_id": channel,
                "thread_ts": thread_ts,
            },
            "event_ts": self.next_ts(),
        }

    def _assistant_thread(self, params: dict[str, Any]) -> tuple[str, str] | None:
        key = (str(params.get("channel_id") or ""), str(params.get("thread_ts") or ""))
        return key if key in self.assistant_threads else None

    def _m_assistant_threads_setStatus(self, params: dict[str, Any]) -> dict[str, Any]:
        key = self._assistant_thread(params)
        if key is None:
            return {"ok": False, "error": "invalid_thread_ts"}
        status = str(params.get("status") or "")
        self.statuses[key] = status
        self.status_history.append((*key, status))
        return {"ok": True}

    def _m_assistant_threads_setTitle(self, params: dict[str, Any]) -> dict[str, Any]:
        key = self._assistant_thread(params)
        if key is None:
            return {"ok": False, "error": "invalid_thread_ts"}
        self.titles[key] = str(params.get("title") or "")
        return {"ok": True}

    def _m_assistant_threads_setSuggestedPrompts(self, params: dict[str, Any]) -> dict[str, Any]:
        prompts = params.get("prompts")
        if isinstance(prompts, str):
            prompts = json.loads(prompts)
        if not prompts or len(prompts) > 4:
            return {"ok": False, "error": "invalid_arguments"}
        if params.get("thread_ts") and self._assistant_thread(params) is None:
            return {"ok": False, "error": "invalid_thread_ts"}
        return {"ok": True}

    def _m_agents_sessions_setStatus(self, params: dict[str, Any]) -> dict[str, Any]:
        if not self.agent_app:
            return {"ok": False, "error": "not_allowed_token_type"}
        status = str(params.get("status") or "")
        if status not in ("active", "processing", "suspended", "closed"):
            return {"ok": False, "error": "invalid_status"}
        key = (str(params.get("channel_id") or ""), str(params.get("thread_ts") or ""))
        if not key[0] or not key[1]:
            return {"ok": False, "error": "invalid_arguments"}
        session = self.sessions.setdefault(key, {"title": str(params.get("title") or "")})
        session["status"] = status
        self.session_history.append((*key, status))
        return {"ok": True, "status": status, "title": session["title"]}

    def session_stopped(self, user_id: str, channel: str, thread_ts: str) -> dict[str, Any]:
        """The user pressed Slack's Stop on a processing session: `agent_session_stopped`."""
        return {
            "type": "agent_session_stopped",
            "user": user_id,
            "channel": channel,
            "thread_ts": thread_ts,
            "streaming_message_ts": [],
            "event_ts": self.next_ts(),
        }

    def _m_views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        view = params.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not isinstance(view, dict) or view.get("type") != "home" or not params.get("user_id"):
            return {"ok": False, "error": "invalid_arguments"}
        self.homes[str(params["user_id"])] = view
        return {"ok": True, "view": {"id": "V1", **view}}

    def _m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel") or not params.get("ts"):
            return {"ok": False, "error": "message_not_found"}
        stored = self.messages.get((str(params["channel"]), str(params["ts"])))
        if stored is not None:
            if stored.get("streaming"):
                return {"ok": False, "error": "message_not_in_streaming_state"}
            stored["text"] = params.get("text", "")
            if "blocks" in params:  # `[]` takes a message's blocks away, as Slack does
                stored["blocks"] = _blocks(params["blocks"])
        return {
            "ok": True,
            "channel": params["channel"],
            "ts": params["ts"],
            "text": params.get("text", ""),
        }

    def _m_chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.messages.pop((str(params.get("channel")), str(params.get("ts"))), None) is None:
            return {"ok": False, "error": "message_not_found"}
        return {"ok": True, "channel": params["channel"], "ts": params["ts"]}

    def _m_chat_startStream(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.refuse_streaming:
            return {"ok": False, "error": self.refuse_streaming}
        channel = str(params.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        if not channel.startswith("D") and not (
            params.get("recipient_user_id") and params.get("recipient_team_id")
        ):
            return {"ok": False, "error": "missing_recipient_user_id"}
        ts = self.next_ts()
        self.messages[(channel, ts)] = {
            "type": "message",
            "ts": ts,
            "thread_ts": params["thread_ts"],
            "text": str(params.get("markdown_text") or ""),
            "streaming": True,
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
        }
        self.statuses.pop((channel, str(params["thread_ts"])), None)  # the reply clears it
        return {"ok": True, "channel": channel, "ts": ts}

    def _m_chat_appendStream(self, params: dict[str, Any]) -> dict[str, Any]:
        stored = self.messages.get((str(params.get("channel")), str(params.get("ts"))))
        if stored is None:
            return {"ok": False, "error": "message_not_found"}
        if not stored.get("streaming"):
            return {"ok": False, "error": "message_not_in_streaming_state"}
        if not params.get("markdown_text"):
            return {"ok": False, "error": "no_text"}
        stored["text"] += str(params["markdown_text"])
        return {"ok": True, "channel": params["channel"], "ts": params["ts"]}

    def _m_chat_stopStream(self, params: dict[str, Any]) -> dict[str, Any]:
        stored = self.messages.get((str(params.get("channel")), str(params.get("ts"))))
        if stored is None:
            return {"ok": False, "error": "message_not_found"}
        if not stored.get("streaming"):
            return {"ok": False, "error": "message_not_in_streaming_state"}
        stored["text"] += str(params.get("markdown_text") or "")
        stored["streaming"] = False
        return {"ok": True, "channel": params["channel"], "ts": params["ts"], "message": stored}

    def texts_in(self, channel: str) -> list[str]:
        """What the bot's messages in a channel read now (after edits and deletes), oldest
        first."""
        return [m["text"] for (c, _), m in sorted(self.messages.items()) if c == channel]

    def _m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel") or not params.get("user"):
            return {"ok": False, "error": "user_not_in_channel"}
        return {"ok": True, "message_ts": self.next_ts()}

    def _m_reactions_add(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel")), str(params.get("timestamp")), str(params.get("name")))
        if key in self._reactions:
            return {"ok": False, "error": "already_reacted"}
        self._reactions.add(key)
        return {"ok": True}

    # -- history ---------------------------------------------------------------------------

    def _conversation(self, channel: str) -> list[dict[str, Any]]:
        """Every message in a channel (people's and the bot's), oldest first."""
        found = {ts: m for (c, ts), m in self.history.items() if c == channel}
        for (c, ts), m in self.messages.items():
            if c == channel and not m.get("streaming"):
                found.setdefault(ts, {**m, "team": self.team_id})
        return [found[ts] for ts in sorted(found, key=lambda t: tuple(map(int, t.split("."))))]

    @staticmethod
    def _in_range(ts: str, params: dict[str, Any]) -> bool:
        inclusive = str(params.get("inclusive", "0")).lower() in ("1", "true")
        key = tuple(map(int, ts.split(".")))
        for bound, below in (("latest", True), ("oldest", False)):
            raw = params.get(bound)
            if not raw:
                continue
            edge = tuple(map(int, str(raw).split(".")))
            if key == edge and not inclusive:
                return False
            if (key > edge) if below else (key < edge):
                return False
        return True

    def _limit(self, params: dict[str, Any], default: int) -> int:
        return max(1, min(int(params.get("limit") or default), self.page_cap))

    def _m_conversations_history(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel") or "")
        if not any(c == channel for c, _ in (*self.history, *self.messages)):
            return {"ok": False, "error": "channel_not_found"}
        top = [
            m
            for m in self._conversation(channel)
            if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
        ]
        newest = [m for m in reversed(top) if self._in_range(m["ts"], params)]
        limit = self._limit(params, 100)
        return {
            "ok": True,
            "messages": newest[:limit],
            "has_more": len(newest) > limit,
            "pin_count": 0,
            "response_metadata": {"next_cursor": ""},
        }

    def _m_conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
        everything = self._conversation(channel)
        if not any(m["ts"] == ts for m in everything):
            return {"ok": False, "error": "thread_not_found"}
        thread = [
            m
            for m in everything
            if (m["ts"] == ts or m.get("thread_ts") == ts) and self._in_range(m["ts"], params)
        ]
        start = int(params.get("cursor") or 0)
        limit = self._limit(params, 1000)
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        return {
            "ok": True,
            "messages": page,
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _m_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(params.get("user")))
        if user is None:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": user}


def _blocks(raw: Any) -> list[dict[str, Any]]:
    """Blocks as slack-sdk sends them: a JSON string in a form body, a list in a JSON body."""
    return json.loads(raw) if isinstance(raw, str) else list(raw)
