"""A fake Telegram Bot API on 127.0.0.1 that the real aiogram client talks to.

It serves `/bot<token>/<method>` like api.telegram.org: form or JSON parameters in, `{"ok": ...}`
out, 401 for an unknown token. It records every call (method, decoded params, arrival time on
the monotonic clock), keeps the chats' messages (assigning per-chat message ids shared by users
and the bot), long-polls `getUpdates` from a queue the test fills (`pushed_at` says when each
update became available), renders HTML the way Telegram does (unknown tags and stray `<` are
"can't parse entities", over 4096 UTF-16 units is "message is too long"), and can fail the next N
calls of a method with a 429 `retry_after` or any other error.

Command menus: `setMyCommands` / `getMyCommands` / `deleteMyCommands` keep one menu per scope
(`BotCommandScope*`) and language in `menus`, checking names and descriptions as Telegram does.

Streaming: `sendMessageDraft` works in private chats only, like Telegram's, and keeps each
draft's latest visible text in `drafts` (a draft is dropped once the bot sends a message there)
and its Stop button flags in `draft_params`; `press_stop()` presses that button;
`deleteMessage` removes a bot message from the chat.

Files: `add_file()` stores bytes under a new file_id; `getFile` answers with its size and a
`file_path`, served at `GET /file/bot<token>/<file_path>` (401 for a wrong token), counted in
`downloads`; `say(photo=..., document=...)` attaches them. `sendPhoto`/`sendDocument` take the
multipart upload (aiogram's `attach://` parts) and keep it in `uploads` and the chat.

Test helpers build realistic payloads: `dm()`/`group()` chats, `say()` for a user message (with
mention and command entities computed like Telegram's), `press()` for a button press,
`create_topic()` for forum topics (whose messages carry Telegram's implicit reply to the topic's
creation message).
"""

from __future__ import annotations

import asyncio
import html
import io
import itertools
import json
import re
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

__all__ = ["TOKEN", "Call", "FakeTelegram", "utf16_len"]

TOKEN = "123456789:AAFakeTokenForSwitchboardTests_0123"
_UPLOAD_LIMIT = 50 * 1024 * 1024 + 65536  # the Bot API's 50 MB document upload, plus the form
_JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "reply_parameters",
        "reaction",
        "commands",
        "allowed_updates",
        "link_preview_options",
        "entities",
        "scope",
    }
)
_INT_FIELDS = frozenset(
    {
        "chat_id",
        "message_id",
        "message_thread_id",
        "user_id",
        "offset",
        "limit",
        "timeout",
        "draft_id",
    }
)
_BOOL_FIELDS = frozenset(
    {"show_alert", "drop_pending_updates", "disable_notification", "can_stop", "keep_on_stop"}
)
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_HTML_TAGS = frozenset(
    {
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "a",
        "tg-emoji",
        "code",
        "pre",
        "blockquote",
    }
)
_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{3,32}\b")
_COMMAND = re.compile(r"^/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?")
_PARSE_ERROR = (
    "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 0"
)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    params: dict[str, Any]
    status: int = 200
    at: float = field(default_factory=time.monotonic, compare=False)  # when it was received


@dataclass(slots=True)
class _Fault:
    status: int
    description: str
    retry_after: int | None = None


@dataclass
class FakeTelegram:
    token: str = TOKEN
    username: str = "switchboard_test_bot"
    calls: list[Call] = field(default_factory=list)
    messages: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    admins: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    reactions_allowed: bool = True
    drafts: dict[tuple[int, int], str] = field(default_factory=dict)  # (chat, draft_id) -> text
    # (chat, draft_id) -> the latest draft's can_stop / keep_on_stop
    draft_params: dict[tuple[int, int], dict[str, bool]] = field(default_factory=dict)
    # (scope JSON, language) -> the menu setMyCommands set there, as getMyCommands returns it
    menus: dict[tuple[str, str], list[dict[str, str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bot_id = int(self.token.split(":", 1)[0])
        self.bot_user = {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": "Switchboard",
            "username": self.username,
        }
        self._chats: dict[int, dict[str, Any]] = {}
        self._next_id: dict[int, itertools.count[int]] = {}
        self._bot_ids: dict[int, list[int]] = defaultdict(list)
        self._updates: list[dict[str, Any]] = []
        self.pushed_at: dict[int, float] = {}  # update_id -> monotonic time it became available
        self._update_ids = itertools.count(1000)
        self._arrived = asyncio.Event()
        self._faults: dict[str, deque[_Fault]] = defaultdict(deque)
        self._holds: dict[str, deque[float]] = defaultdict(deque)
        self.held: list[str] = []  # methods whose call is being held right now (or was)
        self._open_dms: set[int] = set()
        self._users: set[int] = set()  # ids of everyone who wrote anywhere: their private chats
        self.blocked: set[int] = set()  # users who blocked the bot in their private chat
        self._queries: set[str] = set()
        self._query_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._closing = False
        self.polling_now = 0  # getUpdates calls in progress right now
        self.most_pollers = 0  # the most that were ever in progress at once (Telegram: 409)
        self.base_url = ""
        self.files: dict[str, bytes] = {}
        self.downloads: list[str] = []  # file_ids whose bytes were fetched
        self.uploads: list[dict[str, Any]] = []  # {method, chat_id, filename, data, ...}
        self._file_ids = itertools.count(1)
        self.files["p1"] = _tiny_png()  # the photo `say(caption=...)` attaches by default
        # what the last getUpdates/setWebhook asked for; None = Telegram's default (every type
        # but chat_member, message_reaction and message_reaction_count)
        self.allowed_updates: list[str] | None = None

    # -- server ---------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(client_max_size=_UPLOAD_LIMIT)
        app.router.add_route("POST", "/bot{token}/{method}", self._handle)
        app.router.add_route("GET", "/bot{token}/{method}", self._handle)
        app.router.add_route("GET", "/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, handler_cancellation=True
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def stop(self) -> None:
        self._closing = True
        self._arrived.set()  # release long polls, or shutdown would wait for their timeout
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _error(401, "Unauthorized")
        method = request.match_info["method"]
        params = await _params(request)
        handler = getattr(self, f"_m_{method.lower()}", None)
        if handler is None:
            return _error(404, "Not Found: method not found")
        holds = self._holds.get(method.lower())
        if holds and await self._held(request, method, holds.popleft()):
            self.calls.append(Call(method, params, 499))
            return web.Response(status=499)  # the caller hung up: nothing was sent
        faults = self._faults.get(method.lower())
        if faults:
            fault = faults.popleft()
            self.calls.append(Call(method, params, fault.status))
            extra = {"retry_after": fault.retry_after} if fault.retry_after is not None else None
            return _error(fault.status, fault.description, extra)
        self.calls.append(Call(method, params))
        try:
            result = await handler(params)
        except _ApiError as exc:
            self.calls[-1] = Call(method, params, exc.status)
            return _error(exc.status, exc.description)
        return web.json_response({"ok": True, "result": result})

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return _error(401, "Unauthorized")
        file_id = request.match_info["path"].removeprefix("files/")
        data = self.files.get(file_id)
        if data is None:
            return _error(404, "Not Found")
        self.downloads.append(file_id)
        return web.Response(body=data, content_type="application/octet-stream")

    def add_file(self, data: bytes) -> str:
        """Store bytes as a file the bot may fetch; returns its file_id."""
        file_id = f"f{next(self._file_ids)}"
        self.files[file_id] = data
        return file_id

    # -- test controls ----------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        times: int = 1,
        status: int = 400,
        description: str = "Bad Request: test failure",
        retry_after: int | None = None,
    ) -> None:
        for _ in range(times):
            self._faults[method.lower()].append(_Fault(status, description, retry_after))

    def hold_next(self, method: str, seconds: float, *, after: int = 0) -> None:
        """The call after the next `after` calls of `method` waits `seconds` before it is
        processed (a slow platform, or a send paced for long); if the caller hangs up meanwhile
        (a killed worker), it is dropped unprocessed."""
        holds = self._holds[method.lower()]
        holds.extend([0.0] * after)
        holds.append(seconds)

    async def _held(self, request: web.Request, method: str, seconds: float) -> bool:
        """Wait out a hold; whether the caller went away meanwhile."""
        if seconds <= 0:
            return False
        self.held.append(method)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            if request.transport is None or request.transport.is_closing():
                return True
        return False

    def flood_next(self, method: str, *, retry_after: int = 1, times: int = 1) -> None:
        """The next `times` calls get 429 Too Many Requests with `retry_after`."""
        self.fail_next(
            method,
            times=times,
            status=429,
            description=f"Too Many Requests: retry after {retry_after}",
            retry_after=retry_after,
        )

    def reject_entities_next(self, method: str = "sendMessage", *, times: int = 1) -> None:
        self.fail_next(method, times=times, description=_PARSE_ERROR)

    def calls_to(self, method: str, *, ok_only: bool = False) -> list[dict[str, Any]]:
        return [
            c.params
            for c in self.calls
            if c.method.lower() == method.lower() and (c.status == 200 or not ok_only)
        ]

    def bot_messages(self, chat_id: int) -> list[dict[str, Any]]:
        """What the bot has sent into a chat, in order, as they read now (after edits)."""
        return [self.messages[(chat_id, mid)] for mid in self._bot_ids[chat_id]]

    def bot_texts(self, chat_id: int) -> list[str]:
        return [m["text"] for m in self.bot_messages(chat_id)]

    # -- payload builders ---------------------------------------------------------------------

    @staticmethod
    def user(user_id: int, first_name: str = "Ann", username: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
        if username:
            data["username"] = username
        return data

    def dm(self, user: dict[str, Any]) -> dict[str, Any]:
        chat = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
        self._chats[user["id"]] = chat
        return chat

    def group(self, chat_id: int, title: str = "Team", *, forum: bool = False) -> dict[str, Any]:
        chat: dict[str, Any] = {"id": chat_id, "type": "supergroup", "title": title}
        if forum:
            chat["is_forum"] = True
        self._chats[chat_id] = chat
        return chat

    def create_topic(self, chat: dict[str, Any], name: str = "Topic") -> int:
        """A forum topic; its id is the id of its (service) creation message."""
        mid = self._new_message_id(chat["id"])
        self.messages[(chat["id"], mid)] = {
            "message_id": mid,
            "date": int(time.time()),
            "chat": chat,
            "from": self.user(1, "Admin"),
            "message_thread_id": mid,
            "is_topic_message": True,
            "forum_topic_created": {"name": name, "icon_color": 7322096},
        }
        return mid

    def say(
        self,
        chat: dict[str, Any],
        user: dict[str, Any],
        text: str | None = None,
        *,
        reply_to: dict[str, Any] | None = None,
        topic: int | None = None,
        caption: str | None = None,
        sticker: bool = False,
        push: bool = True,
        photo: bytes | None = None,
        document: tuple[str, bytes, str] | None = None,
        voice: bytes | None = None,
        file_size: int | None = None,
        quote: str | None = None,
        external_reply: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A user message in `chat` (stored, and pushed to getUpdates); returns the update.
        `photo` (image bytes), `document` (name, bytes, mime) and `voice` (OGG bytes) become
        real files;
        `file_size` overrides the size the update reports; `quote` is the part of `reply_to`
        the user quoted, `external_reply` a reply to another chat's message (`external`)."""
        mid = self._new_message_id(chat["id"])
        message: dict[str, Any] = {
            "message_id": mid,
            "date": int(time.time()),
            "chat": chat,
            "from": user,
        }
        if text is not None:
            message["text"] = text
            if entities := _entities(text):
                message["entities"] = entities
        if caption is not None:
            message["caption"] = caption
            if entities := _entities(caption):
                message["caption_entities"] = entities
        if photo is not None:
            width, height = _image_size(photo)
            file_id = self.add_file(photo)
            message["photo"] = [
                {"file_id": "thumb", "file_unique_id": "t", "width": 90, "height": 90},
                {
                    "file_id": file_id,
                    "file_unique_id": f"u{file_id}",
                    "width": width,
                    "height": height,
                    "file_size": file_size or len(photo),
                },
            ]
        elif document is not None:
            name, data, mime = document
            message["document"] = {
                "file_id": self.add_file(data),
                "file_unique_id": f"d{len(self.files)}",
                "file_name": name,
                "mime_type": mime,
                "file_size": file_size or len(data),
            }
        elif voice is not None:
            message["voice"] = {
                "file_id": self.add_file(voice),
                "file_unique_id": f"v{len(self.files)}",
                "duration": 3,
                "mime_type": "audio/ogg",
                "file_size": file_size or len(voice),
            }
        elif caption is not None or (sticker is False and text is None):
            message["photo"] = [{"file_id": "p1", "file_unique_id": "u1", "width": 9, "height": 9}]
        if sticker:
            message["sticker"] = {
                "file_id": "s1",
                "file_unique_id": "su1",
                "type": "regular",
                "width": 512,
                "height": 512,
                "is_animated": False,
                "is_video": False,
            }
        if topic is not None:
            message["message_thread_id"] = topic
            message["is_topic_message"] = True
            reply_to = reply_to or self.messages[(chat["id"], topic)]
        if reply_to is not None:
            message["reply_to_message"] = _shallow(reply_to)
        if external_reply is not None:
            message["external_reply"] = external_reply
        if quote is not None:  # the part of the replied message the user selected
            source = str((reply_to or {}).get("text") or quote)
            position = utf16_len(source[: max(source.find(quote), 0)])
            message["quote"] = {"text": quote, "position": position, "is_manual": True}
        self.messages[(chat["id"], mid)] = message
        self._users.add(user["id"])
        if chat["type"] == "private":
            self._open_dms.add(user["id"])
        update = {"update_id": next(self._update_ids), "message": message}
        if push:
            self.push(update)
        return update

    @staticmethod
    def external(
        user: dict[str, Any], *, chat: dict[str, Any] | None = None, message_id: int | None = None
    ) -> dict[str, Any]:
        """An `external_reply`: a reply to a message of another chat (or a channel), which
        carries its origin and media but not its text (a `quote` gives that)."""
        data: dict[str, Any] = {
            "origin": {"type": "user", "date": int(time.time()) - 60, "sender_user": user}
        }
        if chat is not None:
            data["chat"] = chat
        if message_id is not None:
            data["message_id"] = message_id
        return data

    def press(
        self, user: dict[str, Any], message: dict[str, Any], data: str, *, push: bool = True
    ) -> dict[str, Any]:
        """A press on one of the bot's inline buttons; returns the update."""
        query_id = f"cq{next(self._query_ids)}"
        self._queries.add(query_id)
        update = {
            "update_id": next(self._update_ids),
            "callback_query": {
                "id": query_id,
                "from": user,
                "chat_instance": "ci-1",
                "message": _shallow(message),
                "data": data,
            },
        }
        if push:
            self.push(update)
        return update

    def react(
        self,
        user: dict[str, Any],
        message: dict[str, Any],
        emoji: str | None,
        *,
        was: str | None = None,
        push: bool = True,
    ) -> dict[str, Any]:
        """`user` sets their reaction on `message` to `emoji` (None: takes it away), having had
        `was` before: a `message_reaction` update, which Telegram sends only to a bot that
        listed it in `allowed_updates`. Returns the update."""
        chat = message["chat"]
        update = {
            "update_id": next(self._update_ids),
            "message_reaction": {
                "chat": chat,
                "message_id": message["message_id"],
                "user": user,
                "date": int(time.time()),
                "old_reaction": [{"type": "emoji", "emoji": was}] if was else [],
                "new_reaction": [{"type": "emoji", "emoji": emoji}] if emoji else [],
            },
        }
        if push:
            self.push(update)
        return update

    def press_stop(self, chat_id: int, draft_id: int, *, push: bool = True) -> dict[str, Any]:
        """The user presses the Stop button of a draft sent with `can_stop` (Telegram shows
        none otherwise): a `stopped_message_generation` update. Returns the update."""
        if not self.draft_params.get((chat_id, draft_id), {}).get("can_stop"):
            raise AssertionError("that draft has no Stop button")
        update = {
            "update_id": next(self._update_ids),
            "stopped_message_generation": {"chat": self._chats[chat_id], "draft_id": draft_id},
        }
        if push:
            self.push(update)
        return update

    def push(self, update: dict[str, Any]) -> None:
        """Queue an update for getUpdates (a webhook test posts it itself instead)."""
        self.push_many([update])

    def push_many(self, updates: list[dict[str, Any]]) -> None:
        """Queue updates at one instant: a waiting long poll sees them all in one batch."""
        now = time.monotonic()
        for update in updates:
            self._updates.append(update)
            self.pushed_at[update["update_id"]] = now
        self._arrived.set()
        self._arrived = asyncio.Event()

    def next_update_id(self) -> int:
        return next(self._update_ids)

    def _new_message_id(self, chat_id: int) -> int:
        counter = self._next_id.setdefault(chat_id, itertools.count(100))
        return next(counter)

    # -- Bot API methods ------------------------------------------------------------------------

    async def _m_getme(self, params: dict[str, Any]) -> Any:
        return {**self.bot_user, "can_join_groups": True, "can_read_all_group_messages": False}

    async def _m_setmycommands(self, params: dict[str, Any]) -> Any:
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise _ApiError(400, "Bad Request: commands must be a list of at most 100")
        for command in commands:
            name, description = command.get("command", ""), command.get("description", "")
            if not _BOT_COMMAND.fullmatch(name):
                raise _ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(description) <= 256:
                raise _ApiError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        key = _scope_key(params)
        self.menus[key] = [
            {"command": c["command"], "description": c["description"]} for c in commands
        ]
        return True

    async def _m_getmycommands(self, params: dict[str, Any]) -> Any:
        return list(self.menus.get(_scope_key(params), []))

    async def _m_deletemycommands(self, params: dict[str, Any]) -> Any:
        self.menus.pop(_scope_key(params), None)
        return True

    async def _m_deletewebhook(self, params: dict[str, Any]) -> Any:
        return True

    async def _m_setwebhook(self, params: dict[str, Any]) -> Any:
        self.allowed_updates = params.get("allowed_updates") or None
        return True

    async def _m_sendchataction(self, params: dict[str, Any]) -> Any:
        self._chat(params["chat_id"])
        return True

    async def _m_answercallbackquery(self, params: dict[str, Any]) -> Any:
        if params.get("callback_query_id") not in self._queries:
            raise _ApiError(400, "Bad Request: query is too old and response timeout expired")
        self._queries.discard(params["callback_query_id"])
        return True

    async def _m_setmessagereaction(self, params: dict[str, Any]) -> Any:
        if (params["chat_id"], params["message_id"]) not in self.messages:
            raise _ApiError(400, "Bad Request: message to react not found")
        if not self.reactions_allowed:
            raise _ApiError(400, "Bad Request: REACTION_INVALID")
        return True

    async def _m_getfile(self, params: dict[str, Any]) -> Any:
        file_id = params.get("file_id")
        data = self.files.get(str(file_id))
        if data is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        return {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "file_size": len(data),
            "file_path": f"files/{file_id}",
        }

    async def _m_sendphoto(self, params: dict[str, Any]) -> Any:
        return self._upload("sendPhoto", "photo", params)

    async def _m_senddocument(self, params: dict[str, Any]) -> Any:
        return self._upload("sendDocument", "document", params)

    def _upload(self, method: str, field_name: str, params: dict[str, Any]) -> Any:
        chat = self._chat(params["chat_id"])
        ref = params.get(field_name)
        part = params.get(ref[len("attach://") :]) if isinstance(ref, str) else ref
        if not isinstance(part, dict) or "data" not in part:
            raise _ApiError(400, f"Bad Request: there is no {field_name} in the request")
        file_id = self.add_file(part["data"])
        mid = self._new_message_id(chat["id"])
        message: dict[str, Any] = {
            "message_id": mid,
            "date": int(time.time()),
            "chat": chat,
            "from": self.bot_user,
        }
        if field_name == "photo":
            width, height = _image_size(part["data"])
            message["photo"] = [
                {"file_id": file_id, "file_unique_id": file_id, "width": width, "height": height}
            ]
        else:
            message["document"] = {
                "file_id": file_id,
                "file_unique_id": file_id,
                "file_name": part["filename"],
            }
        if thread := params.get("message_thread_id"):
            message["message_thread_id"] = thread
            message["is_topic_message"] = True
        if reply := params.get("reply_parameters"):
            original = self.messages.get((chat["id"], reply["message_id"]))
            if original is not None:
                message["reply_to_message"] = _shallow(original)
        self.messages[(chat["id"], mid)] = message
        self.uploads.append(
            {
                "method": method,
                "chat_id": chat["id"],
                "filename": part["filename"],
                "data": part["data"],
                "message_thread_id": params.get("message_thread_id"),
                "reply_parameters": params.get("reply_parameters"),
            }
        )
        return message

    async def _m_getchatmember(self, params: dict[str, Any]) -> Any:
        user = self.user(params["user_id"])
        if params["user_id"] in self.admins[params["chat_id"]]:
            return {
                "status": "administrator",
                "user": user,
                "can_be_edited": False,
                "is_anonymous": False,
                **dict.fromkeys(_ADMIN_RIGHTS, True),
            }
        return {"status": "member", "user": user}

    async def _m_getupdates(self, params: dict[str, Any]) -> Any:
        self.polling_now += 1
        self.most_pollers = max(self.most_pollers, self.polling_now)
        try:
            return await self._long_poll(params)
        finally:
            self.polling_now -= 1

    async def _long_poll(self, params: dict[str, Any]) -> Any:
        if "allowed_updates" in params:  # Telegram keeps the last list it was given
            self.allowed_updates = params["allowed_updates"] or None
        offset = params.get("offset", 0)
        if offset:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        deadline = time.monotonic() + params.get("timeout", 0)
        while True:
            self._updates = [u for u in self._updates if self._wanted(u)]
            ready = [u for u in self._updates if u["update_id"] >= offset][:100]
            remaining = deadline - time.monotonic()
            if ready or remaining <= 0 or self._closing:
                return ready
            arrived = self._arrived
            try:  # a timer, not wait_for's task (3.11), which tests would take for the bot's
                async with asyncio.timeout(remaining):
                    await arrived.wait()
            except TimeoutError:
                return []

    def _wanted(self, update: dict[str, Any]) -> bool:
        """Whether Telegram would deliver this update to the bot (`allowed_updates`)."""
        kind = next(k for k in update if k != "update_id")
        if self.allowed_updates is None:
            return kind not in _OPT_IN_UPDATES
        return kind in self.allowed_updates

    async def _m_sendmessage(self, params: dict[str, Any]) -> Any:
        chat = self._chat(params["chat_id"])
        visible = _visible(params.get("text", ""), params.get("parse_mode"))
        mid = self._new_message_id(chat["id"])
        message: dict[str, Any] = {
            "message_id": mid,
            "date": int(time.time()),
            "chat": chat,
            "from": self.bot_user,
            "text": visible,
        }
        if thread := params.get("message_thread_id"):
            if (chat["id"], thread) not in self.messages:
                raise _ApiError(400, "Bad Request: message thread not found")
            message["message_thread_id"] = thread
            message["is_topic_message"] = True
        if reply := params.get("reply_parameters"):
            original = self.messages.get((chat["id"], reply["message_id"]))
            if original is not None:
                message["reply_to_message"] = _shallow(original)
            elif not reply.get("allow_sending_without_reply"):
                raise _ApiError(400, "Bad Request: message to be replied not found")
        if markup := params.get("reply_markup"):
            message["reply_markup"] = markup
        self.messages[(chat["id"], mid)] = message
        self._bot_ids[chat["id"]].append(mid)
        for key in [k for k in self.drafts if k[0] == chat["id"]]:
            del self.drafts[key]  # Telegram drops the draft once the bot sends
        return message

    async def _m_sendmessagedraft(self, params: dict[str, Any]) -> Any:
        chat = self._chat(params["chat_id"])
        if chat["type"] != "private":
            raise _ApiError(400, "Bad Request: method is available only in private chats")
        draft_id = params.get("draft_id")
        if not isinstance(draft_id, int) or draft_id == 0:
            raise _ApiError(400, "Bad Request: draft_id must be non-zero")
        text = params.get("text", "")
        self.drafts[(chat["id"], draft_id)] = (
            _visible(text, params.get("parse_mode")) if text else ""
        )
        self.draft_params[(chat["id"], draft_id)] = {
            k: params[k] for k in ("can_stop", "keep_on_stop") if k in params
        }
        return True

    async def _m_deletemessage(self, params: dict[str, Any]) -> Any:
        key = (params["chat_id"], params["message_id"])
        message = self.messages.get(key)
        if message is None:
            raise _ApiError(400, "Bad Request: message to delete not found")
        del self.messages[key]
        if message.get("from", {}).get("id") == self.bot_id:
            self._bot_ids[key[0]].remove(key[1])
        return True

    async def _m_editmessagetext(self, params: dict[str, Any]) -> Any:
        key = (params["chat_id"], params["message_id"])
        message = self.messages.get(key)
        if message is None or message.get("from", {}).get("id") != self.bot_id:
            raise _ApiError(400, "Bad Request: message to edit not found")
        visible = _visible(params.get("text", ""), params.get("parse_mode"))
        markup = params.get("reply_markup")
        if markup is not None and not markup.get("inline_keyboard"):
            markup = None
        if visible == message["text"] and markup == message.get("reply_markup"):
            raise _ApiError(400, "Bad Request: message is not modified")
        updated = {k: v for k, v in message.items() if k != "reply_markup"}
        updated["text"] = visible
        updated["edit_date"] = int(time.time())
        if markup is not None:
            updated["reply_markup"] = markup
        self.messages[key] = updated
        return updated

    def _chat(self, chat_id: Any) -> dict[str, Any]:
        """The chat to send to; a private chat only once its user opened it (Telegram's 403s
        for one never opened or since blocked; 400 for a user the bot never saw)."""
        chat = self._chats.get(chat_id) if isinstance(chat_id, int) else None
        if chat is None and chat_id in self._users:
            raise _ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        if chat is None:
            raise _ApiError(400, "Bad Request: chat not found")
        if chat["type"] == "private" and chat_id in self.blocked:
            raise _ApiError(403, "Forbidden: bot was blocked by the user")
        if chat["type"] == "private" and chat_id not in self._open_dms:
            raise _ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        return chat


_ADMIN_RIGHTS = (
    "can_manage_chat",
    "can_delete_messages",
    "can_manage_video_chats",
    "can_restrict_members",
    "can_promote_members",
    "can_change_info",
    "can_invite_users",
    "can_post_stories",
    "can_edit_stories",
    "can_delete_stories",
    "can_send_welcome_messages",
)


class _ApiError(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


_BOT_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_SCOPES = frozenset(
    {
        "default",
        "all_private_chats",
        "all_group_chats",
        "all_chat_administrators",
        "chat",
        "chat_administrators",
        "chat_member",
    }
)


def _scope_key(params: dict[str, Any]) -> tuple[str, str]:
    """(scope as canonical JSON, language code): a menu's identity, as Telegram keys them."""
    scope = params.get("scope") or {"type": "default"}
    if not isinstance(scope, dict) or scope.get("type") not in _SCOPES:
        raise _ApiError(400, "Bad Request: unsupported bot command scope type")
    if scope["type"].startswith("chat") and "chat_id" not in scope:
        raise _ApiError(400, "Bad Request: chat_id is required for this scope")
    return json.dumps(scope, sort_keys=True), str(params.get("language_code") or "")


def _error(status: int, description: str, parameters: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        return dict(await request.json())
    raw = await request.post() if request.can_read_body else request.query
    params: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, web.FileField):  # a multipart upload (sendPhoto, sendDocument)
            data = value.file.read()
            params[key] = {"filename": value.filename, "data": data}
            continue
        if not isinstance(value, str):
            continue
        if key in _JSON_FIELDS:
            params[key] = json.loads(value)
        elif key in _INT_FIELDS and re.fullmatch(r"-?\d+", value):
            params[key] = int(value)
        elif key in _BOOL_FIELDS:
            params[key] = value == "true"
        else:
            params[key] = value
    return params


def _shallow(message: dict[str, Any]) -> dict[str, Any]:
    """A message as quoted inside another (Telegram does not nest replies further)."""
    return {k: v for k, v in message.items() if k != "reply_to_message"}


def _entities(text: str) -> list[dict[str, Any]]:
    """Mention and leading bot_command entities, with UTF-16 offsets, as Telegram computes them."""
    found = []
    if match := _COMMAND.match(text):
        found.append({"type": "bot_command", "offset": 0, "length": utf16_len(match.group())})
    for match in _MENTION.finditer(text):
        offset = utf16_len(text[: match.start()])
        found.append({"type": "mention", "offset": offset, "length": utf16_len(match.group())})
    return found


def _visible(text: str, parse_mode: str | None) -> str:
    if parse_mode is None:
        shown = text
    elif parse_mode.upper() == "HTML":
        parser = _TelegramHtml()
        parser.feed(text)
        parser.close()
        if parser.open_tags:
            raise _ApiError(400, _PARSE_ERROR)
        shown = "".join(parser.parts)
    else:
        raise _ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode}")
    if not shown.strip():
        raise _ApiError(400, "Bad Request: message text is empty")
    if utf16_len(shown) > 4096:
        raise _ApiError(400, "Bad Request: message is too long")
    return shown


class _TelegramHtml(HTMLParser):
    """Telegram's HTML subset: the text the user sees, or "can't parse entities"."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.parts: list[str] = []
        self.open_tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _HTML_TAGS:
            raise _ApiError(
                400, f'Bad Request: can\'t parse entities: Unsupported start tag "{tag}"'
            )
        self.open_tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open_tags or self.open_tags[-1] != tag:
            raise _ApiError(400, f'Bad Request: can\'t parse entities: Unmatched end tag "{tag}"')
        self.open_tags.pop()

    def handle_data(self, data: str) -> None:
        if "<" in data:
            raise _ApiError(400, _PARSE_ERROR)
        self.parts.append(data)

    def handle_entityref(self, name: str) -> None:
        self.parts.append(html.unescape(f"&{name};"))

    def handle_charref(self, name: str) -> None:
        self.parts.append(html.unescape(f"&#{name};"))


def _image_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def _tiny_png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (9, 9), (0, 0, 0)).save(out, format="PNG")
    return out.getvalue()
