"""Link tokens and links: which workspaces and DM users a Switchboard account vouches for.

A *server* link covers a workspace (Slack team, Discord guild, Telegram group); a *user* link covers
one person's DMs. Links are made in two steps: `/link` in chat creates a token, and the account
owner confirms it over HTTP (or the CLI) with their API key.

Keys (formatted by `keys.py`; all carry the `{access}` hash tag, e.g. `sb:{access}:link:<id>`,
so the scripts below run on Redis Cluster, where a script's keys must share one slot):
- `sb:linktoken:<token>` hash `{kind, platform, target_id, target_name, user_id, user_name,
  created_at, expires_at, status ("pending"|"used"), link_id}`; kept `TOKEN_RECORD_TTL_S` so an
  expired token answers "expired" (410) rather than "unknown" (404) for a day.
- `sb:linkpending:<kind>:<platform>:<target>` the target's newest token. A token that is no longer
  the newest is *superseded*: each `/link` invalidates earlier ones without touching them.
- `sb:linkrate:<scope>:<platform>:<id>` a fixed-window counter of tokens created per workspace and
  per user.
- `sb:link:<id>` hash `{id, account, kind, platform, target_id, target_name, owner_id, owner_name,
  created_at}`; `sb:linked:<kind>:<platform>:<target>` hash `{link_id, account}` (the per-message
  gate reads only this); `sb:acctlinks:<account>` and `sb:links` sets of link ids.

Confirm is one Lua script: it checks the token and the target and, only if both are free, writes
the link and marks the token used, so concurrent confirms give exactly one link. `revoke` (also
one script) ends a pending token now, e.g. one whose private message never reached its person.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys
from switchboard.errors import StorageError, SwitchboardError

__all__ = [
    "LINK_RATE_LIMIT",
    "LINK_RATE_WINDOW_S",
    "TOKEN_PATTERN",
    "TOKEN_RECORD_TTL_S",
    "TOKEN_TTL_S",
    "AlreadyLinked",
    "Link",
    "LinkError",
    "LinkKind",
    "LinkNotFound",
    "LinkRateLimited",
    "LinkToken",
    "Links",
    "TokenGone",
    "TokenNotFound",
    "TokenState",
    "UnlinkResult",
    "UnlinkStatus",
    "WrongTokenKind",
    "is_wellformed_id",
]

TOKEN_TTL_S = 30 * 60  # Long enough to open a browser and find the API key; short if leaked.
TOKEN_RECORD_TTL_S = 24 * 3600  # An expired token says "expired" for a day, then is forgotten.
LINK_RATE_LIMIT = 5  # tokens per window, per workspace and per user: enough for retries and typos
LINK_RATE_WINDOW_S = 15 * 60  # and far too few to spam a channel with link URLs.
_POINTER_SLACK_S = 60  # the newest-token pointer outlives its token, so expiry is judged by time

TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a token or link id may look like; anything else is refused before touching Redis."""


def is_wellformed_id(value: str) -> bool:
    return TOKEN_PATTERN.match(value) is not None


_CREATE_TOKEN = """
local limit = tonumber(ARGV[4])
for i = 3, #KEYS do
  local n = tonumber(redis.call('GET', KEYS[i]) or '0')
  if n >= limit then
    local ttl = redis.call('TTL', KEYS[i])
    if ttl < 0 then ttl = tonumber(ARGV[5]) end
    return {0, ttl}
  end
end
for i = 3, #KEYS do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('EXPIRE', KEYS[i], ARGV[5]) end
end
local fields = {}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[3])
return {1, 0}
"""

_CONFIRM = """
local t = redis.call('HGETALL', KEYS[1])
if #t == 0 then return 'not_found' end
local doc = {}
for i = 1, #t, 2 do doc[t[i]] = t[i + 1] end
if doc['kind'] ~= ARGV[6] or doc['platform'] ~= ARGV[7] or doc['target_id'] ~= ARGV[8] then
  return 'not_found'
end
if ARGV[4] ~= '' and doc['kind'] ~= ARGV[4] then return 'wrong_kind' end
local holder = redis.call('HGET', KEYS[3], 'account')
if holder then
  if holder == ARGV[3] then return 'linked_you' end
  return 'linked_other'
end
if doc['status'] == 'used' then return 'used' end
if tonumber(doc['expires_at']) <= tonumber(ARGV[2]) then return 'expired' end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 'superseded' end
redis.call('HSET', KEYS[4], 'id', ARGV[5], 'account', ARGV[3], 'kind', doc['kind'],
           'platform', doc['platform'], 'target_id', doc['target_id'],
           'target_name', doc['target_name'], 'owner_id', doc['user_id'],
           'owner_name', doc['user_name'], 'created_at', ARGV[2])
redis.call('HSET', KEYS[3], 'link_id', ARGV[5], 'account', ARGV[3])
redis.call('SADD', KEYS[5], ARGV[5])
redis.call('SADD', KEYS[6], ARGV[5])
redis.call('HSET', KEYS[1], 'status', 'used', 'link_id', ARGV[5])
redis.call('DEL', KEYS[2])
return 'ok'
"""

_REVOKE = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 'expires_at', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
"""

_REMOVE = """
local acct = redis.call('HGET', KEYS[1], 'account')
if not acct then return 0 end
if ARGV[2] ~= '' and acct ~= ARGV[2] then return 0 end
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'owner_id') ~= ARGV[3] then return -1 end
if redis.call('HGET', KEYS[2], 'link_id') == ARGV[1] then redis.call('DEL', KEYS[2]) end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
return 1
"""


class LinkKind(StrEnum):
    SERVER = "server"  # a workspace: Slack team, Discord guild, Telegram group
    USER = "user"  # one person's DMs


class TokenState(StrEnum):
    PENDING = "pending"
    USED = "used"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"


class LinkError(SwitchboardError):
    """A link request that cannot be done as asked; each subclass is one HTTP answer."""

    category = "access"


class TokenNotFound(LinkError):
    pass


class TokenGone(LinkError):
    """The token existed but can no longer be used (expired, superseded or already used)."""

    def __init__(self, message: str, *, state: TokenState) -> None:
        super().__init__(message)
        self.state = state


class WrongTokenKind(LinkError):
    def __init__(self, message: str, *, kind: LinkKind) -> None:
        super().__init__(message)
        self.kind = kind


class AlreadyLinked(LinkError):
    def __init__(self, message: str, *, to_you: bool) -> None:
        super().__init__(message)
        self.to_you = to_you


class LinkNotFound(LinkError):
    pass


class LinkRateLimited(LinkError):
    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class LinkToken:
    token: str
    kind: LinkKind
    platform: str
    target_id: str
    target_name: str
    user_id: str  # who ran /link
    user_name: str
    created_at: float
    expires_at: float
    state: TokenState


@dataclass(frozen=True, slots=True)
class Link:
    id: str
    account: str
    kind: LinkKind
    platform: str
    target_id: str
    target_name: str
    owner_id: str  # the chat user who ran /link; only they may /unlink from chat
    owner_name: str
    created_at: float


class UnlinkStatus(StrEnum):
    UNLINKED = "unlinked"
    NOT_LINKED = "not_linked"
    NOT_OWNER = "not_owner"


@dataclass(frozen=True, slots=True)
class UnlinkResult:
    status: UnlinkStatus
    link: Link | None = None  # the link removed, or the one the caller may not remove


def _fields(raw: Mapping[bytes | str, bytes | str]) -> dict[str, str]:
    return {as_text(k): as_text(v) for k, v in raw.items()}


def _link_from(raw: Mapping[bytes | str, bytes | str]) -> Link | None:
    if not raw:
        return None
    f = _fields(raw)
    try:
        return Link(
            id=f["id"],
            account=f["account"],
            kind=LinkKind(f["kind"]),
            platform=f["platform"],
            target_id=f["target_id"],
            target_name=f.get("target_name", ""),
            owner_id=f.get("owner_id", ""),
            owner_name=f.get("owner_name", ""),
            created_at=float(f["created_at"]),
        )
    except (KeyError, ValueError):
        return None


_GONE_TEXT = {
    TokenState.USED: "this link token was already used",
    TokenState.EXPIRED: "this link token has expired; run /link again in chat",
    TokenState.SUPERSEDED: "a newer /link replaced this link token; use the newest one",
}


class Links:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        token_ttl_s: int = TOKEN_TTL_S,
        rate_limit: int = LINK_RATE_LIMIT,
        rate_window_s: int = LINK_RATE_WINDOW_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._r = client
        self._keys = keys
        self.token_ttl_s = token_ttl_s
        self.rate_limit = rate_limit
        self.rate_window_s = rate_window_s
        self._clock = clock
        self._create_token = client.register_script(_CREATE_TOKEN)
        self._confirm = client.register_script(_CONFIRM)
        self._remove = client.register_script(_REMOVE)
        self._revoke = client.register_script(_REVOKE)

    # -- tokens -------------------------------------------------------------------------------

    async def create_token(
        self,
        kind: LinkKind,
        *,
        platform: str,
        target_id: str,
        target_name: str,
        user_id: str,
        user_name: str,
    ) -> LinkToken:
        """A fresh single-use token for the target; earlier pending ones are superseded.

        Raises `LinkRateLimited` when the workspace or the user made too many tokens lately.
        """
        now = self._clock()
        token = _new_token()
        doc = {
            "kind": str(kind),
            "platform": platform,
            "target_id": target_id,
            "target_name": target_name,
            "user_id": user_id,
            "user_name": user_name,
            "created_at": repr(now),
            "expires_at": repr(now + self.token_ttl_s),
            "status": "pending",
        }
        rate_keys = [self._keys.link_rate("user", platform, user_id)]
        if kind is LinkKind.SERVER:
            rate_keys.append(self._keys.link_rate("ws", platform, target_id))
        args: list[str | int] = [
            token,
            max(TOKEN_RECORD_TTL_S, self.token_ttl_s),
            self.token_ttl_s + _POINTER_SLACK_S,
            self.rate_limit,
            self.rate_window_s,
        ]
        for name, value in doc.items():
            args += [name, value]
        with redis_errors("link token create"):
            ok, retry_after = await self._create_token(
                keys=[
                    self._keys.link_token(token),
                    self._keys.link_pending(str(kind), platform, target_id),
                    *rate_keys,
                ],
                args=args,
            )
        if not int(ok):
            raise LinkRateLimited(
                "too many link requests", retry_after=float(max(1, int(retry_after)))
            )
        return LinkToken(
            token=token,
            kind=kind,
            platform=platform,
            target_id=target_id,
            target_name=target_name,
            user_id=user_id,
            user_name=user_name,
            created_at=now,
            expires_at=now + self.token_ttl_s,
            state=TokenState.PENDING,
        )

    async def revoke(self, token: LinkToken) -> bool:
        """End a pending token now (it reads as expired), e.g. one whose message never reached
        the person it was made for; False when it was no longer pending."""
        with redis_errors("link token revoke"):
            done = await self._revoke(
                keys=[
                    self._keys.link_token(token.token),
                    self._keys.link_pending(str(token.kind), token.platform, token.target_id),
                ],
                args=[token.token, repr(self._clock())],
            )
        return bool(int(done))

    async def peek(self, token: str) -> LinkToken:
        """The token and its current state; raises `TokenNotFound` for unknown or malformed ones."""
        raw = await self._token_fields(token)
        with redis_errors("link token read"):
            newest = await self._r.get(
                self._keys.link_pending(raw["kind"], raw["platform"], raw["target_id"])
            )
        if raw.get("status") == "used":
            state = TokenState.USED
        elif float(raw["expires_at"]) <= self._clock():
            state = TokenState.EXPIRED
        elif newest is None or as_text(newest) != token:
            state = TokenState.SUPERSEDED
        else:
            state = TokenState.PENDING
        return LinkToken(
            token=token,
            kind=LinkKind(raw["kind"]),
            platform=raw["platform"],
            target_id=raw["target_id"],
            target_name=raw.get("target_name", ""),
            user_id=raw.get("user_id", ""),
            user_name=raw.get("user_name", ""),
            created_at=float(raw["created_at"]),
            expires_at=float(raw["expires_at"]),
            state=state,
        )

    async def confirm(self, token: str, account: str, kind: LinkKind | None = None) -> Link:
        """Consume the token and create its link, atomically.

        `kind` is the kind the caller's endpoint accepts (None: any). Raises `TokenNotFound`,
        `WrongTokenKind`, `AlreadyLinked` (with `to_you`) or `TokenGone` (with `state`).
        """
        raw = await self._token_fields(token)
        tkind, platform, target = raw["kind"], raw["platform"], raw["target_id"]
        link_id = secrets.token_hex(8)
        now = self._clock()
        with redis_errors("link confirm"):
            outcome = await self._confirm(
                keys=[
                    self._keys.link_token(token),
                    self._keys.link_pending(tkind, platform, target),
                    self._keys.linked(tkind, platform, target),
                    self._keys.link(link_id),
                    self._keys.account_links(account),
                    self._keys.links_index(),
                ],
                args=[
                    token,
                    repr(now),
                    account,
                    str(kind) if kind else "",
                    link_id,
                    tkind,
                    platform,
                    target,
                ],
            )
        outcome = outcome.decode() if isinstance(outcome, bytes) else str(outcome)
        what = "workspace" if tkind == LinkKind.SERVER else "user"
        if outcome == "ok":
            link = await self._link(link_id)
            if link is None:
                raise StorageError("link vanished right after it was created")
            return link
        if outcome == "not_found":
            raise TokenNotFound("unknown link token")
        if outcome == "wrong_kind":
            raise WrongTokenKind(f"this is a {tkind} link token", kind=LinkKind(tkind))
        if outcome == "linked_you":
            raise AlreadyLinked(f"this {what} is already linked to your account", to_you=True)
        if outcome == "linked_other":
            raise AlreadyLinked(f"this {what} is already linked to another account", to_you=False)
        state = TokenState(outcome)
        raise TokenGone(_GONE_TEXT[state], state=state)

    async def _token_fields(self, token: str) -> dict[str, str]:
        if not is_wellformed_id(token):
            raise TokenNotFound("unknown link token")
        with redis_errors("link token read"):
            raw = await self._r.hgetall(self._keys.link_token(token))
        fields = _fields(raw)
        if not all(k in fields for k in ("kind", "platform", "target_id", "expires_at")):
            raise TokenNotFound("unknown link token")
        if fields["kind"] not in tuple(LinkKind):
            raise TokenNotFound("unknown link token")
        return fields

    # -- links --------------------------------------------------------------------------------

    async def is_workspace_linked(self, platform: str, workspace_id: str) -> bool:
        return await self._exists(self._keys.linked(LinkKind.SERVER, platform, workspace_id))

    async def is_user_linked(self, platform: str, user_id: str) -> bool:
        return await self._exists(self._keys.linked(LinkKind.USER, platform, user_id))

    async def _exists(self, key: str) -> bool:
        with redis_errors("link check"):
            return bool(await self._r.exists(key))

    async def link_for(self, kind: LinkKind, platform: str, target_id: str) -> Link | None:
        """The link covering this workspace (server) or user (user), if any."""
        with redis_errors("link read"):
            link_id = await self._r.hget(self._keys.linked(kind, platform, target_id), "link_id")
        return None if link_id is None else await self._link(as_text(link_id))

    async def _link(self, link_id: str) -> Link | None:
        with redis_errors("link read"):
            raw = await self._r.hgetall(self._keys.link(link_id))
        return _link_from(raw)

    async def list(self, account: str | None = None) -> list[Link]:
        """The account's links (every link when `account` is None), oldest first."""
        index = self._keys.links_index() if account is None else self._keys.account_links(account)
        with redis_errors("link list"):
            ids = await self._r.smembers(index)
            async with self._r.pipeline(transaction=False) as pipe:
                for link_id in ids:
                    pipe.hgetall(self._keys.link(as_text(link_id)))
                rows = await pipe.execute()
        found = [link for link in (_link_from(row) for row in rows) if link is not None]
        return sorted(found, key=lambda link: (link.created_at, link.id))

    async def delete(self, account: str, link_id: str) -> Link:
        """Remove one of the account's links; someone else's link is `LinkNotFound`, like a
        missing one, so ids never reveal whether they exist."""
        link = await self._link(link_id) if is_wellformed_id(link_id) else None
        if link is None or link.account != account:
            raise LinkNotFound("unknown link")
        if await self._remove_link(link, account=account) != 1:
            raise LinkNotFound("unknown link")
        return link

    async def unlink(
        self, kind: LinkKind, platform: str, target_id: str, *, by_user: str
    ) -> UnlinkResult:
        """Remove a link from chat; only the person who ran `/link` for it may."""
        link = await self.link_for(kind, platform, target_id)
        if link is None:
            return UnlinkResult(UnlinkStatus.NOT_LINKED)
        if link.owner_id != by_user:
            return UnlinkResult(UnlinkStatus.NOT_OWNER, link)
        code = await self._remove_link(link, owner=by_user)
        if code == -1:
            return UnlinkResult(UnlinkStatus.NOT_OWNER, link)
        if code != 1:
            return UnlinkResult(UnlinkStatus.NOT_LINKED)
        return UnlinkResult(UnlinkStatus.UNLINKED, link)

    async def _remove_link(self, link: Link, *, account: str = "", owner: str = "") -> int:
        with redis_errors("link delete"):
            code = await self._remove(
                keys=[
                    self._keys.link(link.id),
                    self._keys.linked(link.kind, link.platform, link.target_id),
                    self._keys.account_links(link.account),
                    self._keys.links_index(),
                ],
                args=[link.id, account, owner],
            )
        return int(code)


def _new_token() -> str:
    """32 random bytes, URL-safe; never led by "-", which `switchboard links confirm TOKEN`
    (argparse) would take for an option (1 token in 64 otherwise)."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token
