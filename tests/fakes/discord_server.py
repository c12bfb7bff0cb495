"""A fake Discord: the REST routes discord.py calls plus a v10 JSON gateway, on 127.0.0.1.

The real discord.py client talks to it unchanged (pointed here through `DISCORD_API_BASE` /
`DISCORD_GATEWAY_URL`). REST calls are recorded with their JSON bodies and arrival times (messages
can be created, edited and deleted; content over 2000 characters is refused; `fail_next` answers
the next matching calls with a 429 as Discord words it); the gateway speaks HELLO,
IDENTIFY → READY + GUILD_CREATE, heartbeat ACKs, RESUME → (replayed events) RESUMED, and compresses
frames the way the client asked (`zstd-stream`, `zlib-stream`, or none). Tests drive it:
`user_message(...)` / `press(...)` dispatch MESSAGE_CREATE / INTERACTION_CREATE, `reconnect()`
sends op 7 and can send already-delivered events again after the RESUME (a duplicate delivery).
`identified_intents` keeps each IDENTIFY's intents; `delay_next` answers a call late.

Reactions as Discord keeps them: `react(...)` / `unreact(...)` put one person's reaction on a
message or take it off and dispatch MESSAGE_REACTION_ADD / _REMOVE in Discord's shape (the member
and the message's author on an add only); `GET /channels/{c}/messages/{m}/reactions/{emoji}`
lists who has it on, by user id (`after`, `limit` up to 100).

Sharding as on Discord: `GET /gateway/bot` recommends `shard_count` shards; an IDENTIFY's
`shard: [id, count]` (none means [0, 1]) makes a session that gets a guild's events only when
`(guild_id >> 22) % count == id`, and DMs only on shard 0. Every open session that matches gets
the event, so two sessions on one shard show up as a duplicate delivery. `add_guild(shard=...)`
makes a guild (with one text channel) whose id lands on that shard.

Application commands as Discord keeps them: `GET`/`PUT` (bulk overwrite) of
`/applications/{app}/commands` and `/applications/{app}/guilds/{guild}/commands`, names and
descriptions checked, ids kept per name and a new `version` per change, `default_member_permissions`
returned as a string (`app_commands`). `slash(name, ...)` dispatches INTERACTION_CREATE (type 2) for a
registered command with the member's permissions in the channel; `stale_command(name, ...)` one
for a message context-menu command the bot no longer has. Interactions are answered the way
Discord does: one callback each, within `ack_deadline_s` (3 s; later is 10062 Unknown
interaction), recorded in `callbacks`; the first follow-up to a deferred command (type 5) replaces
its "thinking…" message and is as ephemeral as the defer was; `expire_interactions()` ends every
token's 15 minutes.

History as Discord serves it: `GET /channels/{id}/messages` (newest first; `before`, `after`
or `around`, `limit` up to 100) and `GET /channels/{id}/messages/{id}` read every stored message;
`refuse_history` answers both 403 Missing Access; `nicks` gives members a nickname;
`user_thread(...)` opens a thread someone else owns.

The world: one guild with a text channel, the bot, users alice, bob (both plain members) and
carol (Manage Server through a role), and another bot (the guild's owner). Threads created from a message take its id, as on
Discord; they appear in later GUILD_CREATEs and are announced with THREAD_CREATE. The bot's own
messages come back over the gateway as MESSAGE_CREATE, as they do on Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from aiohttp import WSMsgType, web

from tests.support import wait_until

__all__ = ["Call", "Callback", "FakeDiscord", "Followup"]

TOKEN = "fake-discord-token"
_TS = "2024-01-01T00:00:00.000000+00:00"
_MANAGE_GUILD = 1 << 5
_MENTION = re.compile(r"<@!?(\d+)>")
_MAX_CONTENT = 2000
_DISCORD_EPOCH_MS = 1_420_070_400_000


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str  # without the /api/v10 prefix
    json: Any
    query: dict[str, str]
    at: float = field(default_factory=time.monotonic, compare=False)  # when it was received
    limited: bool = False  # answered 429 (`fail_next`)


@dataclass(frozen=True, slots=True)
class Followup:
    interaction_id: str
    user_id: str
    content: str
    ephemeral: bool
    replaced_thinking: bool = False  # the first follow-up to a deferred command


@dataclass(frozen=True, slots=True)
class Callback:
    """An interaction response (`POST /interactions/{id}/{token}/callback`)."""

    interaction_id: str
    type: int  # 5: deferred channel message ("thinking…"), 6: deferred update, 4: message
    ephemeral: bool
    after_s: float  # seconds after the interaction was dispatched
    content: str = ""  # a type 4 answer's text


def _user(uid: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(uid),
        "username": name,
        "discriminator": "0",
        "global_name": name.capitalize(),
        "avatar": None,
        "bot": bot,
    }


def _json(data: Any, *, status: int = 200) -> web.Response:
    """A JSON response typed exactly `application/json`, as Discord sends it (discord.py only
    decodes bodies whose content type is exactly that)."""
    body = json.dumps(data).encode()
    return web.Response(body=body, status=status, headers={"Content-Type": "application/json"})


def _error(status: int, code: int, message: str) -> web.Response:
    return _json({"message": message, "code": code}, status=status)


_COMMAND_NAME = re.compile(r"[-_a-z0-9]{1,32}")


def _command_problem(body: Any) -> str | None:
    """What Discord's bulk overwrite would refuse in `body`, or None."""
    if not isinstance(body, list) or len(body) > 100:
        return "expected a list of at most 100 commands"
    names = [c.get("name") for c in body if isinstance(c, dict)]
    if len(names) != len(body) or len(set(names)) != len(names):
        return "command names must be unique"
    for command in body:
        if not _COMMAND_NAME.fullmatch(str(command.get("name"))):
            return f"invalid command name {command.get('name')!r}"
        if not 1 <= len(command.get("description") or "") <= 100:
            return f"description of {command['name']} must be 1-100 characters"
        for option in command.get("options") or ():
            if not _COMMAND_NAME.fullmatch(str(option.get("name"))):
                return f"invalid option name {option.get('name')!r}"
            if not 1 <= len(option.get("description") or "") <= 100:
                return f"option description of {command['name']} must be 1-100 characters"
    return None


@dataclass
class _Conn:
    ws: web.WebSocketResponse
    compression: str | None
    _zlib: Any = None
    _zstd: Any = None

    def __post_init__(self) -> None:
        if self.compression == "zlib-stream":
            self._zlib = zlib.compressobj()
        elif self.compression == "zstd-stream":
            import zstandard

            self._zstd = zstandard.ZstdCompressor().compressobj()

    async def send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        if self._zlib is not None:
            await self.ws.send_bytes(
                self._zlib.compress(data) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
            )
        elif self._zstd is not None:
            import zstandard

            frame = self._zstd.compress(data) + self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            await self.ws.send_bytes(frame)
        else:
            await self.ws.send_str(data.decode())


@dataclass
class _Session:
    """One gateway session (IDENTIFY to its end); it outlives its connection for RESUME."""

    id: str
    shard: tuple[int, int]
    conn: _Conn | None
    seq: int = 0
    log: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)

    def wants(self, guild_id: str | None) -> bool:
        shard_id, count = self.shard
        if not guild_id:
            return shard_id == 0
        return (int(guild_id) >> 22) % count == shard_id


@dataclass
class FakeDiscord:
    token: str = TOKEN
    calls: list[Call] = field(default_factory=list)
    followups: list[Followup] = field(default_factory=list)
    callbacks: list[Callback] = field(default_factory=list)
    ack_deadline_s: float = 3.0  # Discord's window for the first response to an interaction
    # (None: global, or a guild id) -> the application's commands there, as GET returns them
    app_commands: dict[str | None, list[dict[str, Any]]] = field(default_factory=dict)
    thread_failure: tuple[int, int, str] | None = (
        None  # (status, code, message) for thread creation
    )
    dm_closed: set[str] = field(default_factory=set)  # users whose DMs refuse the bot
    identifies: int = 0
    resumes: int = 0
    heartbeats: int = 0
    shard_count: int = 1  # what GET /gateway/bot recommends
    identified: list[tuple[int, int]] = field(default_factory=list)  # each IDENTIFY's shard
    identified_intents: list[int] = field(default_factory=list)  # each IDENTIFY's intents
    refuse_history: bool = False  # message reads answer 403 Missing Access
    nicks: dict[str, str] = field(default_factory=dict)  # user id -> guild nickname

    def __post_init__(self) -> None:
        # ids carry their time, as Discord's do: a message made now reads as sent now
        self._ids = itertools.count((int(time.time() * 1000) - _DISCORD_EPOCH_MS) << 22)
        self.bot = _user(self._id(), "switchboard", bot=True)
        self.application_id = self.bot["id"]
        self.alice = _user(self._id(), "alice")
        self.bob = _user(self._id(), "bob")
        self.carol = _user(self._id(), "carol")
        self.other_bot = _user(self._id(), "otherbot", bot=True)
        self.users = {
            u["id"]: u for u in (self.bot, self.alice, self.bob, self.carol, self.other_bot)
        }
        self.admins = {self.carol["id"]}
        self.guild_id = str(self._id())
        self.guilds: list[str] = [self.guild_id]
        self._blocks = itertools.count((int(self.guild_id) >> 22) + 1)  # add_guild's id space
        self.admin_role = str(self._id())
        self.channel_id = str(self._id())
        self.channels: dict[str, dict[str, Any]] = {}
        self._text_channel(self.channel_id, self.guild_id)
        self.messages: dict[str, dict[str, Any]] = {}
        self.reactions: dict[tuple[str, str], list[str]] = {}  # (message, emoji) -> user ids
        self.threads: dict[str, dict[str, Any]] = {}
        self._dms: dict[str, str] = {}  # user id -> DM channel id
        self._interactions: dict[str, dict[str, Any]] = {}  # token -> interaction payload
        self._dispatched: dict[str, float] = {}  # token -> when its INTERACTION_CREATE went out
        self._acked: dict[str, dict[str, Any]] = {}  # token -> {type, ephemeral, thinking}
        self._expired: set[str] = set()  # tokens past their 15 minutes
        self._sessions: dict[str, _Session] = {}  # by session id, oldest first
        self._replay: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.cdn: dict[str, bytes] = {}  # attachment id -> bytes, served at /attachments/...
        self.downloads: list[str] = []  # attachment ids fetched from the CDN
        self.uploads: list[dict[str, Any]] = []  # files the bot sent: channel, filename, data
        self._failures: list[tuple[str, str, float]] = []  # (method, path regex, retry_after)
        self._delays: list[tuple[str, str, float]] = []  # (method, path regex, seconds)

    def _id(self) -> int:
        return next(self._ids)

    def _text_channel(self, cid: str, gid: str) -> None:
        self.channels[cid] = {
            "id": cid,
            "type": 0,
            "guild_id": gid,
            "name": "general",
            "position": 0,
            "permission_overwrites": [],
            "nsfw": False,
            "parent_id": None,
            "topic": None,
            "last_message_id": None,
            "rate_limit_per_user": 0,
        }

    def add_guild(self, *, shard: int) -> tuple[str, str]:
        """A guild on shard `shard` of `shard_count` (add it before the bot connects), with one
        text channel; returns (guild id, channel id)."""
        block = next(self._blocks)
        while block % self.shard_count != shard:
            block = next(self._blocks)
        gid, cid = str(block << 22), str(self._id())
        self.guilds.append(gid)
        self._text_channel(cid, gid)
        return gid, cid

    def shard_of(self, guild_id: str) -> int:
        return (int(guild_id) >> 22) % self.shard_count

    def _live(self, shard_id: int = 0) -> _Session | None:
        """The newest session of shard `shard_id` (connected or waiting for a RESUME)."""
        sessions = [x for x in self._sessions.values() if x.shard[0] == shard_id]
        return sessions[-1] if sessions else None

    @property
    def _conn(self) -> _Conn | None:
        session = self._live()
        return session.conn if session else None

    def connected_shards(self) -> list[tuple[int, int]]:
        """The shards of the sessions connected right now (a shard twice: two sessions)."""
        return sorted(x.shard for x in self._sessions.values() if x.conn is not None)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        app.router.add_get("/attachments/{cid}/{aid}/{name}", self._cdn)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        for session in list(self._sessions.values()):
            if session.conn is not None:
                await session.conn.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # -- queries for tests --------------------------------------------------------------------

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        """Recorded calls whose path fully matches the regex `pattern`."""
        rx = re.compile(pattern)
        return [c for c in self.calls if c.method == method and rx.fullmatch(c.path)]

    def fail_next(
        self, method: str, pattern: str, *, times: int = 1, retry_after: float = 0.2
    ) -> None:
        """The next `times` calls of `method` on a path matching `pattern` get a 429."""
        self._failures.extend([(method, pattern, retry_after)] * times)

    def delay_next(self, method: str, pattern: str, seconds: float) -> None:
        """The next call of `method` on a path matching `pattern` is answered `seconds` late (a
        slow read, so a later call can be answered first)."""
        self._delays.append((method, pattern, seconds))

    def bot_messages(self, channel_id: str) -> list[dict[str, Any]]:
        """What the bot posted in a channel (not ephemeral follow-ups), oldest first."""
        return [
            m
            for m in self.messages.values()
            if m["channel_id"] == channel_id and m["author"]["id"] == self.bot["id"]
        ]

    def dm_channel(self, user: dict[str, Any]) -> str:
        uid = user["id"]
        if uid not in self._dms:
            cid = str(self._id())
            self._dms[uid] = cid
            self.channels[cid] = {
                "id": cid,
                "type": 1,
                "recipients": [user],
                "last_message_id": None,
            }
        return self._dms[uid]

    # -- gateway driving ----------------------------------------------------------------------

    async def dispatch(self, event: str, data: dict[str, Any]) -> int:
        """Send a DISPATCH to every session of the event's shard (a session whose connection is
        gone keeps it for its RESUME); returns the last sequence number used."""
        guild_id = data.get("guild_id")
        seq = 0
        for session in list(self._sessions.values()):
            if session.wants(str(guild_id) if guild_id else None):
                seq = await self._emit(session, event, data)
        return seq

    async def _emit(self, session: _Session, event: str, data: dict[str, Any]) -> int:
        session.seq += 1
        session.log.append((session.seq, event, data))
        if session.conn is not None:
            with contextlib.suppress(ConnectionError, RuntimeError):  # closing: RESUME replays it
                await session.conn.send({"op": 0, "t": event, "s": session.seq, "d": data})
        return session.seq

    async def user_message(
        self,
        content: str,
        *,
        author: dict[str, Any] | None = None,
        channel_id: str | None = None,
        dm: bool = False,
        reply_to: str | None = None,
        files: list[tuple[str, bytes, str]] | None = None,
    ) -> dict[str, Any]:
        """A person (alice by default) posts; returns the MESSAGE_CREATE payload. `files`
        (name, bytes, content type) become attachments served by the fake CDN."""
        author = author or self.alice
        channel_id = self.dm_channel(author) if dm else (channel_id or self.channel_id)
        data = self._message(channel_id, author, content, reference=reply_to)
        for name, blob, content_type in files or ():
            aid = str(self._id())
            self.cdn[aid] = blob
            url = f"http://127.0.0.1:{self.port}/attachments/{channel_id}/{aid}/{name}?ex=1&hm=s"
            data["attachments"].append(
                {
                    "id": aid,
                    "filename": name,
                    "size": len(blob),
                    "url": url,
                    "proxy_url": url,
                    "content_type": content_type,
                }
            )
        data["mentions"] = [
            self.users[uid] for uid in _MENTION.findall(content) if uid in self.users
        ]
        if not dm:
            data["member"] = self._member(author["id"], with_user=False)
        await self.dispatch("MESSAGE_CREATE", data)
        return data

    async def user_thread(self, name: str, *, owner: dict[str, Any] | None = None) -> str:
        """A public thread in the text channel that a person (alice) opened, announced with
        THREAD_CREATE; returns its id."""
        owner = owner or self.alice
        tid = str(self._id())
        thread = {
            "id": tid,
            "type": 11,
            "guild_id": self.guild_id,
            "parent_id": self.channel_id,
            "owner_id": owner["id"],
            "name": name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": _TS,
                "locked": False,
                "create_timestamp": _TS,
            },
        }
        self.threads[tid] = self.channels[tid] = thread
        await self.dispatch("THREAD_CREATE", thread | {"newly_created": True})
        return tid

    def expire_interactions(self) -> None:
        """Every interaction token handed out so far is past its 15 minutes."""
        self._expired.update(self._interactions)

    def permissions(self, uid: str) -> int:
        """A member's permissions from their roles (@everyone grants none here)."""
        return _MANAGE_GUILD if uid in self.admins else 0

    async def slash(
        self,
        name: str,
        *,
        user: dict[str, Any] | None = None,
        channel_id: str | None = None,
        dm: bool = False,
        options: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Someone (alice by default) runs `/name` (a registered command: in the channel's guild,
        else global); INTERACTION_CREATE of type 2, as Discord sends it."""
        user = user or self.alice
        channel_id = self.dm_channel(user) if dm else (channel_id or self.channel_id)
        channel = self.channels[channel_id]
        guild_id = channel.get("guild_id")
        registered = self.app_commands.get(guild_id, []) if guild_id else []
        command = next((c for c in registered if c["name"] == name), None)
        if command is None:
            command = next((c for c in self.app_commands.get(None, []) if c["name"] == name), None)
        assert command is not None, f"/{name} is not registered: Discord would not offer it"
        iid = str(self._id())
        inner: dict[str, Any] = {"id": command["id"], "name": name, "type": 1}
        if options:
            inner["options"] = [{"name": k, "type": 3, "value": v} for k, v in options.items()]
        if command.get("guild_id"):
            inner["guild_id"] = command["guild_id"]
        data: dict[str, Any] = {
            "id": iid,
            "application_id": self.application_id,
            "type": 2,
            "token": f"itoken-{iid}",
            "version": 1,
            "channel_id": channel_id,
            "channel": channel,
            "data": inner,
            "locale": "en-US",
            "app_permissions": "2248473465835073",
            "attachment_size_limit": 10 * 1024 * 1024,
            "entitlements": [],
            "context": 0 if guild_id else 1,
            "authorizing_integration_owners": {"0": guild_id} if guild_id else {"1": user["id"]},
        }
        if guild_id:
            data["guild_id"] = guild_id
            data["guild_locale"] = "en-US"
            data["member"] = self._member(user["id"], with_user=True) | {
                "permissions": str(self.permissions(user["id"]))
            }
        else:
            data["user"] = user
        self._interactions[data["token"]] = data
        self._dispatched[data["token"]] = time.monotonic()
        await self.dispatch("INTERACTION_CREATE", data)
        return data

    async def stale_command(
        self,
        name: str,
        *,
        target: dict[str, Any],
        kind: int = 3,
        user: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Someone (alice by default) runs `name`, a command Discord still shows though the bot
        no longer registers it (clients cache the command list; another build of the app
        registered it): with `kind` 3 picked from `target`'s Apps menu (a message context-menu
        command, the target message resolved), with 1 typed as a slash command in its
        channel. INTERACTION_CREATE of type 2, as Discord sends it."""
        user = user or self.alice
        iid = str(self._id())
        channel = self.channels[target["channel_id"]]
        guild_id = channel.get("guild_id")
        inner: dict[str, Any] = {"id": str(self._id()), "name": name, "type": kind}
        if kind == 3:
            inner["target_id"] = target["id"]
            inner["resolved"] = {"messages": {target["id"]: target}}
        data: dict[str, Any] = {
            "id": iid,
            "application_id": self.application_id,
            "type": 2,
            "token": f"itoken-{iid}",
            "version": 1,
            "channel_id": channel["id"],
            "channel": channel,
            "data": inner,
            "locale": "en-US",
            "app_permissions": "2248473465835073",
            "attachment_size_limit": 10 * 1024 * 1024,
            "entitlements": [],
            "context": 0 if guild_id else 1,
            "authorizing_integration_owners": {"0": guild_id} if guild_id else {"1": user["id"]},
        }
        if guild_id:
            data["guild_id"] = guild_id
            data["guild_locale"] = "en-US"
            data["member"] = self._member(user["id"], with_user=True) | {
                "permissions": str(self.permissions(user["id"]))
            }
        else:
            data["user"] = user
        self._interactions[data["token"]] = data
        self._dispatched[data["token"]] = time.monotonic()
        await self.dispatch("INTERACTION_CREATE", data)
        return data

    async def press(
        self, message: dict[str, Any], custom_id: str, *, user: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Someone (alice by default) presses a button on `message`; INTERACTION_CREATE."""
        user = user or self.alice
        iid = str(self._id())
        channel = self.channels[message["channel_id"]]
        data: dict[str, Any] = {
            "id": iid,
            "application_id": self.application_id,
            "type": 3,
            "token": f"itoken-{iid}",
            "version": 1,
            "channel_id": channel["id"],
            "channel": channel,
            "data": {"custom_id": custom_id, "component_type": 2},
            "message": message,
            "locale": "en-US",
            "app_permissions": "0",
            "attachment_size_limit": 10 * 1024 * 1024,
            "entitlements": [],
            "authorizing_integration_owners": {},
        }
        if channel.get("guild_id"):
            data["guild_id"] = channel["guild_id"]
            data["guild_locale"] = "en-US"
            # the member's permissions in this channel, as Discord computes them
            permissions = str(self.permissions(user["id"]))
            data["member"] = self._member(user["id"], with_user=True) | {"permissions": permissions}
        else:
            data["user"] = user
        self._interactions[data["token"]] = data
        self._dispatched[data["token"]] = time.monotonic()
        await self.dispatch("INTERACTION_CREATE", data)
        return data

    async def react(
        self,
        message: dict[str, Any],
        emoji: str,
        *,
        user: dict[str, Any] | None = None,
        emoji_id: str | None = None,
        burst: bool = False,
    ) -> dict[str, Any]:
        """Someone (alice by default) puts `emoji` on `message` (a server's custom emoji with
        `emoji_id`); MESSAGE_REACTION_ADD, with the member in a guild and the message's author."""
        user = user or self.alice
        reactors = self.reactions.setdefault((message["id"], emoji), [])
        if user["id"] not in reactors:
            reactors.append(user["id"])
        data = self._reaction(message, emoji, user, emoji_id=emoji_id, burst=burst)
        data["message_author_id"] = message["author"]["id"]
        data["burst_colors"] = ["#ffcc00"] if burst else []
        if data.get("guild_id"):
            data["member"] = self._member(user["id"], with_user=True)
        await self.dispatch("MESSAGE_REACTION_ADD", data)
        return data

    async def unreact(
        self,
        message: dict[str, Any],
        emoji: str,
        *,
        user: dict[str, Any] | None = None,
        emoji_id: str | None = None,
        burst: bool = False,
    ) -> dict[str, Any]:
        """Someone (alice by default) takes `emoji` off `message`; MESSAGE_REACTION_REMOVE."""
        user = user or self.alice
        reactors = self.reactions.get((message["id"], emoji), [])
        if user["id"] in reactors:
            reactors.remove(user["id"])
        data = self._reaction(message, emoji, user, emoji_id=emoji_id, burst=burst)
        await self.dispatch("MESSAGE_REACTION_REMOVE", data)
        return data

    def _reaction(
        self,
        message: dict[str, Any],
        emoji: str,
        user: dict[str, Any],
        *,
        emoji_id: str | None,
        burst: bool,
    ) -> dict[str, Any]:
        data: dict[str, Any] = {
            "user_id": user["id"],
            "channel_id": message["channel_id"],
            "message_id": message["id"],
            "emoji": {"id": emoji_id, "name": emoji} | ({"animated": False} if emoji_id else {}),
            "burst": burst,
            "type": 1 if burst else 0,
        }
        guild_id = self.channels[message["channel_id"]].get("guild_id")
        if guild_id:
            data["guild_id"] = guild_id
        return data

    async def reconnect(self, *, replay: Sequence[dict[str, Any]] = (), shard: int = 0) -> None:
        """Ask the client to reconnect (op 7) and wait for its RESUME. Events in `replay` (payloads
        it already received) are sent again before RESUMED, as a gateway that lost the client's
        sequence ack would: a duplicate delivery."""
        session = self._live(shard)
        assert session is not None and session.conn is not None
        before = self.resumes
        self._replay = list(replay)
        await session.conn.send({"op": 7, "d": None})
        await wait_until(lambda: self.resumes > before and session.conn is not None)

    async def drop(self, code: int, *, shard: int = 0) -> None:
        """Close shard `shard`'s live gateway connection with `code` (4010-4013 end discord.py's
        gateway loop instead of resuming: the shape of a connection that died for good)."""
        session = self._live(shard)
        assert session is not None and session.conn is not None
        await session.conn.ws.close(code=code)

    # -- gateway ------------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        conn = _Conn(ws, request.query.get("compress"))
        await conn.send({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        async for frame in ws:
            if frame.type is not WSMsgType.TEXT:
                continue
            payload = json.loads(frame.data)
            op, data = payload.get("op"), payload.get("d")
            if op == 1:
                self.heartbeats += 1
                await conn.send({"op": 11, "d": None, "s": None, "t": None})
            elif op == 2:
                await self._identify(conn, data)
            elif op == 6:
                await self._resume(conn, data)
        for session in self._sessions.values():
            if session.conn is conn:
                session.conn = None
        return ws

    async def _identify(self, conn: _Conn, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            await conn.ws.close(code=4004, message=b"Authentication failed.")
            return
        shard_id, count = data.get("shard") or (0, 1)
        if not 0 <= shard_id < count:
            await conn.ws.close(code=4010, message=b"Invalid shard.")
            return
        self.identifies += 1
        self.identified.append((shard_id, count))
        self.identified_intents.append(int(data.get("intents") or 0))
        for old in [x for x in self._sessions.values() if x.shard[0] == shard_id]:
            if old.conn is None:  # a new session replaces the shard's resumable one
                del self._sessions[old.id]
        session = _Session(id=f"session-{self._id()}", shard=(shard_id, count), conn=conn)
        self._sessions[session.id] = session
        guilds = [g for g in self.guilds if session.wants(g)]
        await self._emit(
            session,
            "READY",
            {
                "v": 10,
                "user": self.bot,
                "guilds": [{"id": g, "unavailable": True} for g in guilds],
                "session_id": session.id,
                "resume_gateway_url": self.gateway_url,
                "application": {"id": self.application_id, "flags": 0},
                "private_channels": [],
                "relationships": [],
                "shard": [shard_id, count],
            },
        )
        for gid in guilds:
            await self._emit(session, "GUILD_CREATE", self._guild(gid))

    async def _resume(self, conn: _Conn, data: dict[str, Any]) -> None:
        session = self._sessions.get(str(data.get("session_id")))
        if data.get("token") != self.token or session is None:
            await conn.send({"op": 9, "d": False, "s": None, "t": None})
            return
        seen = int(data.get("seq") or 0)
        again, self._replay = self._replay, []
        replay = [e for e in session.log if e[0] <= seen and any(e[2] is p for p in again)]
        replay += [e for e in session.log if e[0] > seen]
        for seq, event, payload in replay:
            await conn.send({"op": 0, "t": event, "s": seq, "d": payload})
        session.conn = conn
        self.resumes += 1
        await self._emit(session, "RESUMED", {})

    # -- REST ---------------------------------------------------------------------------------

    async def _cdn(self, request: web.Request) -> web.StreamResponse:
        aid = request.match_info["aid"]
        if aid not in self.cdn or "hm" not in request.query:  # CDN links are signed
            return web.Response(status=404)
        self.downloads.append(aid)
        return web.Response(body=self.cdn[aid], content_type="application/octet-stream")

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        body: Any = None
        if request.content_type == "multipart/form-data":  # a message with files
            form = await request.post()
            body = json.loads(str(form.get("payload_json") or "{}"))
            body["_files"] = [
                {"filename": v.filename, "data": v.file.read()}
                for v in form.values()
                if isinstance(v, web.FileField)
            ]
        elif request.can_read_body:
            raw = await request.read()
            body = json.loads(raw) if raw and request.content_type == "application/json" else raw
        for failure in self._failures:
            method, pattern, retry_after = failure
            if method == request.method and re.fullmatch(pattern, path):
                self._failures.remove(failure)
                self.calls.append(
                    Call(request.method, path, body, dict(request.query), limited=True)
                )
                limited = {"message": "You are being rate limited.", "retry_after": retry_after}
                response = _json({**limited, "global": False}, status=429)
                response.headers["Via"] = "1.1 google"  # discord.py reads a 429 without it as a ban
                return response
        self.calls.append(Call(request.method, path, body, dict(request.query)))
        for delay in self._delays:
            if delay[0] == request.method and re.fullmatch(delay[1], path):
                self._delays.remove(delay)
                await asyncio.sleep(delay[2])
                break
        authorised = request.headers.get("Authorization") == f"Bot {self.token}"
        if not authorised and not path.startswith(("/interactions/", "/webhooks/")):
            return _error(401, 0, "401: Unauthorized")
        for method, pattern, handler in self._routes():
            match = re.fullmatch(pattern, path)
            if method == request.method and match:
                if handler in (self._list_messages, self._reactors):
                    return await handler(body, query=dict(request.query), **match.groupdict())
                return await handler(body, **match.groupdict())
        return _error(404, 0, "404: Not Found")

    def _routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("GET", r"/users/@me", self._me),
            ("GET", r"/oauth2/applications/@me", self._application),
            ("GET", r"/gateway/bot", self._gateway_bot),
            ("POST", r"/channels/(?P<cid>\d+)/messages", self._create_message),
            ("PATCH", r"/channels/(?P<cid>\d+)/messages/(?P<mid>\d+)", self._edit_message),
            ("DELETE", r"/channels/(?P<cid>\d+)/messages/(?P<mid>\d+)", self._delete_message),
            ("POST", r"/channels/(?P<cid>\d+)/messages/(?P<mid>\d+)/threads", self._thread),
            ("PUT", r"/channels/(?P<cid>\d+)/messages/(?P<mid>\d+)/reactions/[^/]+/@me", self._ok),
            (
                "GET",
                r"/channels/(?P<cid>\d+)/messages/(?P<mid>\d+)/reactions/(?P<emoji>[^/]+)",
                self._reactors,
            ),
            ("POST", r"/channels/(?P<cid>\d+)/typing", self._ok),
            ("GET", r"/channels/(?P<cid>\d+)/messages", self._list_messages),
            ("GET", r"/channels/(?P<cid>\d+)/messages/(?P<mid>\d+)", self._get_message),
            ("GET", r"/channels/(?P<cid>\d+)", self._channel),
            ("POST", r"/users/@me/channels", self._open_dm),
            ("GET", r"/guilds/(?P<gid>\d+)/members/(?P<uid>\d+)", self._get_member),
            ("GET", r"/applications/(?P<app>\d+)/commands", self._get_commands),
            ("PUT", r"/applications/(?P<app>\d+)/commands", self._put_commands),
            ("GET", r"/applications/(?P<app>\d+)/guilds/(?P<gid>\d+)/commands", self._get_commands),
            ("PUT", r"/applications/(?P<app>\d+)/guilds/(?P<gid>\d+)/commands", self._put_commands),
            ("POST", r"/interactions/(?P<iid>\d+)/(?P<token>[^/]+)/callback", self._callback),
            ("POST", r"/webhooks/(?P<app>\d+)/(?P<token>[^/]+)", self._followup),
        ]

    async def _ok(self, body: Any, **_: str) -> web.Response:
        return web.Response(status=204)

    async def _me(self, body: Any) -> web.Response:
        return _json(self.bot)

    async def _application(self, body: Any) -> web.Response:
        return _json(
            {
                "id": self.application_id,
                "name": "Switchboard",
                "icon": None,
                "description": "",
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": self.carol,
                "verify_key": "0" * 64,
                "flags": 0,
                "summary": "",
            }
        )

    async def _gateway_bot(self, body: Any) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return _json(
            {"url": self.gateway_url, "shards": self.shard_count, "session_start_limit": limit}
        )

    async def _create_message(self, body: Any, cid: str) -> web.Response:
        channel = self.channels.get(cid)
        if channel is None:
            return _error(404, 10003, "Unknown Channel")
        if channel["type"] == 1 and channel["recipients"][0]["id"] in self.dm_closed:
            return _error(403, 50007, "Cannot send messages to this user")
        if len(body.get("content") or "") > _MAX_CONTENT:
            return _error(400, 50035, "Invalid Form Body: content must be 2000 or fewer in length")
        reference = (body.get("message_reference") or {}).get("message_id")
        data = self._message(cid, self.bot, body.get("content") or "", reference=reference)
        data["components"] = body.get("components") or []
        for file in body.get("_files") or ():
            self.uploads.append({"channel_id": cid, "message_id": data["id"], **file})
            aid = str(self._id())
            self.cdn[aid] = file["data"]
            url = f"http://127.0.0.1:{self.port}/attachments/{cid}/{aid}/{file['filename']}?hm=s"
            data["attachments"].append(
                {
                    "id": aid,
                    "filename": file["filename"],
                    "size": len(file["data"]),
                    "url": url,
                    "proxy_url": url,
                }
            )
        await self.dispatch("MESSAGE_CREATE", data)  # Discord echoes the bot's own messages
        return _json(data)

    async def _edit_message(self, body: Any, cid: str, mid: str) -> web.Response:
        message = self.messages.get(mid)
        if message is None or message["channel_id"] != cid:
            return _error(404, 10008, "Unknown Message")
        if len(body.get("content") or "") > _MAX_CONTENT:
            return _error(400, 50035, "Invalid Form Body: content must be 2000 or fewer in length")
        if "content" in body:
            message["content"] = body["content"]
        if "components" in body:
            message["components"] = body["components"]
        message["edited_timestamp"] = _TS
        return _json(message)

    async def _delete_message(self, body: Any, cid: str, mid: str) -> web.Response:
        message = self.messages.get(mid)
        if message is None or message["channel_id"] != cid:
            return _error(404, 10008, "Unknown Message")
        del self.messages[mid]
        return web.Response(status=204)

    async def _thread(self, body: Any, cid: str, mid: str) -> web.Response:
        if self.thread_failure is not None:
            return _error(*self.thread_failure)
        message = self.messages.get(mid)
        if message is None or message["channel_id"] != cid:
            return _error(404, 10008, "Unknown Message")
        if mid in self.threads:
            return _error(400, 160004, "A thread has already been created for this message")
        thread = {
            "id": mid,
            "type": 11,
            "guild_id": self.channels[cid]["guild_id"],
            "parent_id": cid,
            "owner_id": self.bot["id"],
            "name": body["name"],
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": body.get("auto_archive_duration", 1440),
                "archive_timestamp": _TS,
                "locked": False,
                "create_timestamp": _TS,
            },
        }
        self.threads[mid] = self.channels[mid] = thread
        await self.dispatch("THREAD_CREATE", thread | {"newly_created": True})
        return _json(thread, status=201)

    async def _list_messages(self, body: Any, cid: str, query: dict[str, str]) -> web.Response:
        if cid not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        if self.refuse_history:
            return _error(403, 50001, "Missing Access")
        limit = max(1, min(int(query.get("limit") or 50), 100))
        here = sorted(
            (m for m in self.messages.values() if m["channel_id"] == cid),
            key=lambda m: int(m["id"]),
        )
        if "before" in query:
            here = [m for m in here if int(m["id"]) < int(query["before"])][-limit:]
        elif "after" in query:
            here = [m for m in here if int(m["id"]) > int(query["after"])][:limit]
        elif "around" in query:
            pivot = int(query["around"])
            older = [m for m in here if int(m["id"]) < pivot][-(limit // 2) :]
            newer = [m for m in here if int(m["id"]) >= pivot][: limit - len(older)]
            here = older + newer
        else:
            here = here[-limit:]
        return _json([self._served(m) for m in reversed(here)])

    async def _get_message(self, body: Any, cid: str, mid: str) -> web.Response:
        if self.refuse_history:
            return _error(403, 50001, "Missing Access")
        message = self.messages.get(mid)
        if message is None or message["channel_id"] != cid:
            return _error(404, 10008, "Unknown Message")
        return _json(self._served(message))

    async def _reactors(
        self, body: Any, cid: str, mid: str, emoji: str, query: dict[str, str]
    ) -> web.Response:
        message = self.messages.get(mid)
        if message is None or message["channel_id"] != cid:
            return _error(404, 10008, "Unknown Message")
        limit = max(1, min(int(query.get("limit") or 25), 100))
        after = int(query.get("after") or 0)
        ids = sorted(int(u) for u in self.reactions.get((mid, unquote(emoji)), ()))
        return _json([self.users[str(u)] for u in ids if u > after][:limit])

    @staticmethod
    def _served(message: dict[str, Any]) -> dict[str, Any]:
        """A stored message as REST returns it: no `member`, no `guild_id` (gateway-only)."""
        return {k: v for k, v in message.items() if k not in ("member", "guild_id")}

    async def _channel(self, body: Any, cid: str) -> web.Response:
        channel = self.channels.get(cid)
        return _json(channel) if channel else _error(404, 10003, "Unknown Channel")

    async def _open_dm(self, body: Any) -> web.Response:
        user = self.users.get(str(body.get("recipient_id")))
        if user is None:
            return _error(400, 50035, "Invalid Form Body")
        return _json(self.channels[self.dm_channel(user)])

    async def _get_member(self, body: Any, gid: str, uid: str) -> web.Response:
        if gid not in self.guilds or uid not in self.users:
            return _error(404, 10007, "Unknown Member")
        return _json(self._member(uid, with_user=True))

    async def _callback(self, body: Any, iid: str, token: str) -> web.Response:
        interaction = self._interactions.get(token)
        if interaction is None or interaction["id"] != iid:
            return _error(404, 10062, "Unknown interaction")
        if token in self._acked:
            return _error(400, 40060, "Interaction has already been acknowledged.")
        after = time.monotonic() - self._dispatched.get(token, time.monotonic())
        if after > self.ack_deadline_s:
            return _error(404, 10062, "Unknown interaction")
        kind = int(body.get("type") or 0)
        ephemeral = bool(int((body.get("data") or {}).get("flags") or 0) & 64)
        self._acked[token] = {"type": kind, "ephemeral": ephemeral, "thinking": kind == 5}
        content = str((body.get("data") or {}).get("content") or "")
        self.callbacks.append(Callback(iid, kind, ephemeral, after, content))
        answer: dict[str, Any] = {
            "id": iid,
            "type": interaction["type"],
            "response_message_loading": kind == 5,
            "response_message_ephemeral": ephemeral,
        }
        resource: dict[str, Any] = {"type": kind}
        if kind == 5:  # the "<bot> is thinking…" message the first follow-up will replace
            loading = self._message(interaction["channel_id"], self.bot, "", store=False)
            loading["flags"] = 128 | (64 if ephemeral else 0)
            answer["response_message_id"] = loading["id"]
            resource["message"] = loading
        return _json({"interaction": answer, "resource": resource})

    async def _followup(self, body: Any, app: str, token: str) -> web.Response:
        interaction = self._interactions.get(token)
        if interaction is None or app != self.application_id:
            return _error(404, 10015, "Unknown Webhook")
        if token in self._expired:
            return _error(401, 50027, "Invalid Webhook Token")
        acked = self._acked.get(token)
        if acked is None:
            return _error(404, 10015, "Unknown Webhook")
        user = (interaction.get("member") or {}).get("user") or interaction.get("user") or {}
        ephemeral = bool(int(body.get("flags") or 0) & 64)
        replaced = bool(acked["thinking"])
        if replaced:  # Discord: it edits the loading message, keeping the defer's visibility
            ephemeral, acked["thinking"] = bool(acked["ephemeral"]), False
        content = body.get("content") or ""
        self.followups.append(Followup(interaction["id"], user["id"], content, ephemeral, replaced))
        data = self._message(interaction["channel_id"], self.bot, content, store=not ephemeral)
        data["webhook_id"] = app
        data["flags"] = 64 if ephemeral else 0
        return _json(data)

    async def _get_commands(self, body: Any, app: str, gid: str | None = None) -> web.Response:
        if app != self.application_id:
            return _error(403, 50001, "Missing Access")
        return _json(self.app_commands.get(gid, []))

    async def _put_commands(self, body: Any, app: str, gid: str | None = None) -> web.Response:
        if app != self.application_id:
            return _error(403, 50001, "Missing Access")
        if gid is not None and gid not in self.guilds:
            return _error(403, 50001, "Missing Access")  # not in the guild, or no commands scope
        problem = _command_problem(body)
        if problem is not None:
            return _error(400, 50035, f"Invalid Form Body: {problem}")
        before = {c["name"]: c for c in self.app_commands.get(gid, [])}
        stored = []
        for command in body:
            old = before.get(command["name"])
            permissions = command.get("default_member_permissions")
            entry: dict[str, Any] = {
                "id": old["id"] if old else str(self._id()),
                "application_id": self.application_id,
                "version": str(self._id()),
                "type": int(command.get("type") or 1),
                "name": command["name"],
                "description": command.get("description", ""),
                "default_member_permissions": None if permissions is None else str(permissions),
                "dm_permission": command.get("dm_permission", True),
                "contexts": command.get("contexts") if gid is None else None,
                "integration_types": command.get("integration_types") or [0],
                "nsfw": bool(command.get("nsfw", False)),
            }
            if command.get("options"):
                entry["options"] = command["options"]
            if gid is not None:
                entry["guild_id"] = gid
            stored.append(entry)
        self.app_commands[gid] = stored
        return _json(stored)

    # -- payload builders ---------------------------------------------------------------------

    def _message(
        self,
        channel_id: str,
        author: dict[str, Any],
        content: str,
        *,
        reference: str | None = None,
        store: bool = True,
    ) -> dict[str, Any]:
        mid = str(self._id())
        data: dict[str, Any] = {
            "id": mid,
            "channel_id": channel_id,
            "author": author,
            "content": content,
            "timestamp": _TS,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "components": [],
            "pinned": False,
            "type": 19 if reference else 0,
            "flags": 0,
        }
        if reference:
            data["message_reference"] = {"message_id": reference, "channel_id": channel_id}
            if reference in self.messages:
                data["referenced_message"] = self.messages[reference]
        if self.channels[channel_id].get("guild_id"):
            data["guild_id"] = self.channels[channel_id]["guild_id"]
        if store:
            self.messages[mid] = data
        return data

    def _member(self, uid: str, *, with_user: bool) -> dict[str, Any]:
        member: dict[str, Any] = {
            "roles": [self.admin_role] if uid in self.admins else [],
            "joined_at": _TS,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "nick": self.nicks.get(uid),
            "avatar": None,
            "pending": False,
        }
        if with_user:
            member["user"] = self.users[uid]
        return member

    def _guild(self, gid: str) -> dict[str, Any]:
        def role(rid: str, name: str, perms: int, position: int) -> dict[str, Any]:
            return {
                "id": rid,
                "name": name,
                "permissions": str(perms),
                "position": position,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }

        return {
            "id": gid,
            "name": "Test Guild",
            "icon": None,
            "owner_id": self.other_bot["id"],
            "roles": [
                role(gid, "@everyone", 0, 0),
                role(self.admin_role, "admins", _MANAGE_GUILD, 1),
            ],
            "channels": [
                c for c in self.channels.values() if c["type"] == 0 and c["guild_id"] == gid
            ],
            "threads": [t for t in self.threads.values() if t["guild_id"] == gid],
            "members": [self._member(self.bot["id"], with_user=True)],
            "member_count": len(self.users),
            "large": False,
            "unavailable": False,
            "joined_at": _TS,
            "features": [],
            "emojis": [],
            "stickers": [],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "afk_timeout": 300,
            "system_channel_flags": 0,
        }
