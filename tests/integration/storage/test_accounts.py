"""Accounts on real Redis: keys shown once, stored hashed, revocation immediate."""

from __future__ import annotations

import hashlib

import pytest
import redis.asyncio as aioredis

from storage import (
    AccountError,
    AccountExists,
    AccountNotFound,
    Accounts,
    InvalidAccountName,
    Keys,
)


@pytest.fixture
def accounts(redis: aioredis.Redis, keys: Keys) -> Accounts:
    return Accounts(redis, keys=keys)


async def test_created_key_authenticates_as_its_account(accounts: Accounts) -> None:
    key = await accounts.create("acme")
    assert key.startswith("sbk_") and len(key) > 40
    account = await accounts.authenticate(key)
    assert account is not None and account.name == "acme" and account.active


async def test_only_a_hash_of_the_key_is_stored(
    accounts: Accounts, redis: aioredis.Redis, prefix: str
) -> None:
    key = await accounts.create("acme")
    digest = hashlib.sha256(key.encode()).hexdigest()
    stored: list[bytes] = []
    async for name in redis.scan_iter(match=f"{prefix}*"):
        stored.append(name)
        kind = await redis.type(name)
        if kind == b"hash":
            stored.extend(v for v in (await redis.hgetall(name)).values())
        elif kind == b"string":
            stored.append(await redis.get(name))
    assert all(key.encode() not in blob for blob in stored)
    assert any(digest.encode() in blob for blob in stored)


async def test_account_names_are_unique(accounts: Accounts) -> None:
    await accounts.create("acme")
    with pytest.raises(AccountExists):
        await accounts.create("acme")


@pytest.mark.parametrize("name", ["", "has space", "a:b", "x" * 65, "-lead", "ü"])
async def test_malformed_names_are_refused(accounts: Accounts, name: str) -> None:
    with pytest.raises(InvalidAccountName):
        await accounts.create(name)


async def test_unknown_or_malformed_keys_do_not_authenticate(accounts: Accounts) -> None:
    await accounts.create("acme")
    for key in ("", "sbk_nope", "not-a-key", "sbk_" + "a" * 500):
        assert await accounts.authenticate(key) is None


async def test_revoked_key_stops_working_at_once(accounts: Accounts) -> None:
    key = await accounts.create("acme")
    assert await accounts.authenticate(key) is not None
    revoked = await accounts.revoke("acme")
    assert not revoked.active
    assert await accounts.authenticate(key) is None


async def test_revoking_twice_or_unknown_account_is_an_error(accounts: Accounts) -> None:
    await accounts.create("acme")
    await accounts.revoke("acme")
    with pytest.raises(AccountError):
        await accounts.revoke("acme")
    with pytest.raises(AccountNotFound):
        await accounts.revoke("ghost")


async def test_list_shows_every_account_oldest_first(accounts: Accounts) -> None:
    for name in ("first", "second", "third"):
        await accounts.create(name)
    await accounts.revoke("second")
    listed = await accounts.list()
    assert [a.name for a in listed] == ["first", "second", "third"]
    assert [a.active for a in listed] == [True, False, True]
