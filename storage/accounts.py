"""Switchboard accounts and their API keys.

An account is a name plus one API key. The key (`sbk_` + 32 random bytes, URL-safe) is shown once,
at creation; Redis keeps only its SHA-256 digest, which is enough because the key has 256 bits of
entropy (no salt or slow hash needed against guessing).

`sb:{access}:account:<name>` is a hash `{name, key_sha256, created_at, revoked_at}`;
`sb:{access}:accounts` a zset of names scored by creation time; `sb:{access}:apikey:<sha256>` maps a
live key's digest to its account name. Revoking deletes that mapping in the same script that marks
the account, so a revoked key fails authentication on the very next request. The `{access}` hash
tag keeps these keys (and the links') in one Redis Cluster slot, where such a script may run.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys
from switchboard.errors import StorageError, SwitchboardError

__all__ = [
    "API_KEY_PREFIX",
    "Account",
    "AccountError",
    "AccountExists",
    "AccountNotFound",
    "Accounts",
    "InvalidAccountName",
]

API_KEY_PREFIX = "sbk_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_MAX_KEY_LEN = 128  # real keys are 47 chars; anything far longer is not worth hashing

_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'name', ARGV[1], 'key_sha256', ARGV[2], 'created_at', ARGV[3],
           'revoked_at', '')
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('SET', KEYS[3], ARGV[1])
return 1
"""
_REVOKE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'revoked_at') ~= '' then return 2 end
local digest = redis.call('HGET', KEYS[1], 'key_sha256')
if digest ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'revoked_at', ARGV[2])
return 1
"""


class AccountError(SwitchboardError):
    """An operator's request about accounts that cannot be done as asked."""

    category = "access"


class AccountExists(AccountError):
    pass


class AccountNotFound(AccountError):
    pass


class InvalidAccountName(AccountError):
    pass


@dataclass(frozen=True, slots=True)
class Account:
    name: str
    created_at: float
    revoked_at: float | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _decode(raw: Mapping[bytes | str, bytes | str]) -> Account | None:
    if not raw:
        return None
    fields = {as_text(k): as_text(v) for k, v in raw.items()}
    revoked = fields.get("revoked_at") or ""
    return Account(
        name=fields["name"],
        created_at=float(fields["created_at"]),
        revoked_at=float(revoked) if revoked else None,
    )


class Accounts:
    def __init__(self, client: redis.Redis, *, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._create = client.register_script(_CREATE)
        self._revoke = client.register_script(_REVOKE)

    async def create(self, name: str) -> str:
        """Create the account and return its API key: the only time the key is ever visible."""
        if not _NAME.match(name):
            raise InvalidAccountName(
                "account names are 1-64 characters of letters, digits, '_', '.', '-', "
                "starting with a letter or digit"
            )
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        digest = _digest(key)
        with redis_errors("account create"):
            created = await self._create(
                keys=[
                    self._keys.account(name),
                    self._keys.accounts(),
                    self._keys.api_key(digest),
                ],
                args=[name, digest, repr(time.time())],
            )
        if not created:
            raise AccountExists(f"account {name!r} already exists")
        return key

    async def get(self, name: str) -> Account | None:
        if not _NAME.match(name):
            return None
        with redis_errors("account read"):
            raw = await self._r.hgetall(self._keys.account(name))
        return _decode(raw)

    async def list(self) -> list[Account]:
        """Every account, revoked ones included, oldest first."""
        with redis_errors("account list"):
            # redis-py types ZRANGE's reply for withscores=True as well; without it, members only
            names = cast("list[bytes | str]", await self._r.zrange(self._keys.accounts(), 0, -1))
            async with self._r.pipeline(transaction=False) as pipe:
                for name in names:
                    pipe.hgetall(self._keys.account(as_text(name)))
                rows = await pipe.execute()
        return [a for a in (_decode(row) for row in rows) if a is not None]

    async def revoke(self, name: str) -> Account:
        """Revoke the account's key at once; the account and its links stay on record."""
        account = await self.get(name)
        if account is None:
            raise AccountNotFound(f"no account named {name!r}")
        with redis_errors("account revoke"):
            raw_digest = await self._r.hget(self._keys.account(name), "key_sha256")
            digest = as_text(raw_digest or b"")
            code = await self._revoke(
                keys=[self._keys.account(name), self._keys.api_key(digest)],
                args=[digest, repr(time.time())],
            )
        if int(code) == 0:
            raise AccountNotFound(f"no account named {name!r}")
        if int(code) == 2:
            raise AccountError(f"account {name!r} is already revoked")
        if int(code) == -1:
            raise StorageError("account record changed during revoke; try again")
        revoked = await self.get(name)
        assert revoked is not None
        return revoked

    async def authenticate(self, key: str) -> Account | None:
        """The live account this API key belongs to, or None (unknown, malformed or revoked)."""
        if not key.startswith(API_KEY_PREFIX) or len(key) > _MAX_KEY_LEN:
            return None
        with redis_errors("authentication"):
            name = await self._r.get(self._keys.api_key(_digest(key)))
        if name is None:
            return None
        account = await self.get(as_text(name))
        return account if account is not None and account.active else None
