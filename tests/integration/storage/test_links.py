"""Link tokens and links on real Redis: single use, supersession, rate limits, atomic confirm."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from storage import (
    TOKEN_TTL_S,
    AlreadyLinked,
    Keys,
    LinkKind,
    LinkNotFound,
    LinkRateLimited,
    Links,
    LinkToken,
    TokenGone,
    TokenNotFound,
    TokenState,
    UnlinkStatus,
    WrongTokenKind,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def links(redis: aioredis.Redis, keys: Keys, clock: Clock) -> Links:
    return Links(redis, keys=keys, clock=clock)


async def server_token(
    links: Links, *, workspace: str = "T1", user: str = "U1", platform: str = "slack"
) -> LinkToken:
    return await links.create_token(
        LinkKind.SERVER,
        platform=platform,
        target_id=workspace,
        target_name=f"workspace {workspace}",
        user_id=user,
        user_name="alice",
    )


async def user_token(links: Links, *, user: str = "U1", platform: str = "telegram") -> LinkToken:
    return await links.create_token(
        LinkKind.USER,
        platform=platform,
        target_id=user,
        target_name="alice",
        user_id=user,
        user_name="alice",
    )


async def test_new_token_is_pending_and_expires_in_thirty_minutes(
    links: Links, clock: Clock
) -> None:
    token = await server_token(links)
    assert len(token.token) >= 43
    seen = await links.peek(token.token)
    assert seen.state is TokenState.PENDING
    assert seen.kind is LinkKind.SERVER
    assert seen.expires_at == clock.now + 30 * 60 == clock.now + TOKEN_TTL_S


async def test_confirm_links_the_workspace_and_uses_the_token(links: Links) -> None:
    token = await server_token(links)
    assert not await links.is_workspace_linked("slack", "T1")
    link = await links.confirm(token.token, "acme", LinkKind.SERVER)
    assert (link.account, link.platform, link.target_id, link.owner_id) == (
        "acme",
        "slack",
        "T1",
        "U1",
    )
    assert await links.is_workspace_linked("slack", "T1")
    assert not await links.is_workspace_linked("discord", "T1")
    assert (await links.peek(token.token)).state is TokenState.USED
    assert [x.id for x in await links.list("acme")] == [link.id]


async def test_user_token_links_the_user_only(links: Links) -> None:
    token = await user_token(links, user="42")
    await links.confirm(token.token, "acme", LinkKind.USER)
    assert await links.is_user_linked("telegram", "42")
    assert not await links.is_workspace_linked("telegram", "42")


async def test_expired_token_is_gone(links: Links, clock: Clock) -> None:
    token = await server_token(links)
    clock.now += TOKEN_TTL_S + 1
    assert (await links.peek(token.token)).state is TokenState.EXPIRED
    with pytest.raises(TokenGone) as err:
        await links.confirm(token.token, "acme")
    assert err.value.state is TokenState.EXPIRED


async def test_newer_token_supersedes_the_pending_one(links: Links) -> None:
    old = await server_token(links)
    new = await server_token(links)
    assert (await links.peek(old.token)).state is TokenState.SUPERSEDED
    with pytest.raises(TokenGone) as err:
        await links.confirm(old.token, "acme")
    assert err.value.state is TokenState.SUPERSEDED
    await links.confirm(new.token, "acme")


async def test_tokens_for_other_targets_do_not_supersede_each_other(links: Links) -> None:
    a = await server_token(links, workspace="T1")
    await server_token(links, workspace="T2", user="U2")
    assert (await links.peek(a.token)).state is TokenState.PENDING


async def test_wrong_kind_is_refused_without_consuming(links: Links) -> None:
    token = await user_token(links)
    with pytest.raises(WrongTokenKind):
        await links.confirm(token.token, "acme", LinkKind.SERVER)
    assert (await links.peek(token.token)).state is TokenState.PENDING


async def test_unknown_and_malformed_tokens_are_not_found(links: Links) -> None:
    for token in ("x" * 43, "a/b", "", "y" * 65):
        with pytest.raises(TokenNotFound):
            await links.peek(token)
        with pytest.raises(TokenNotFound):
            await links.confirm(token, "acme")


async def test_already_linked_says_whether_to_you(links: Links) -> None:
    first = await server_token(links)
    await links.confirm(first.token, "acme")
    again = await server_token(links)
    with pytest.raises(AlreadyLinked) as mine:
        await links.confirm(again.token, "acme")
    assert mine.value.to_you
    with pytest.raises(AlreadyLinked) as theirs:
        await links.confirm(again.token, "other")
    assert not theirs.value.to_you
    assert "another account" in str(theirs.value)


async def test_twenty_concurrent_confirms_make_exactly_one_link(links: Links) -> None:
    token = await server_token(links)
    results = await asyncio.gather(
        *(links.confirm(token.token, f"acct{i % 3}") for i in range(20)), return_exceptions=True
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(isinstance(r, AlreadyLinked | TokenGone) for r in results if r not in winners)
    assert len(await links.list()) == 1


async def test_token_creation_is_rate_limited_per_user(redis: aioredis.Redis, keys: Keys) -> None:
    links = Links(redis, keys=keys, rate_limit=2)
    await user_token(links, user="U9")
    await user_token(links, user="U9")
    with pytest.raises(LinkRateLimited) as err:
        await user_token(links, user="U9")
    assert 0 < err.value.retry_after <= links.rate_window_s
    await user_token(links, user="U8")


async def test_token_creation_is_rate_limited_per_workspace(
    redis: aioredis.Redis, keys: Keys
) -> None:
    links = Links(redis, keys=keys, rate_limit=2)
    await server_token(links, workspace="T5", user="U1")
    await server_token(links, workspace="T5", user="U2")
    with pytest.raises(LinkRateLimited):
        await server_token(links, workspace="T5", user="U3")
    await server_token(links, workspace="T6", user="U3")


async def test_delete_removes_own_link_and_hides_others(links: Links) -> None:
    token = await server_token(links)
    link = await links.confirm(token.token, "acme")
    with pytest.raises(LinkNotFound):
        await links.delete("other", link.id)
    with pytest.raises(LinkNotFound):
        await links.delete("acme", "no-such-id")
    assert await links.is_workspace_linked("slack", "T1")
    await links.delete("acme", link.id)
    assert not await links.is_workspace_linked("slack", "T1")
    assert await links.list("acme") == []
    with pytest.raises(LinkNotFound):
        await links.delete("acme", link.id)


async def test_unlink_from_chat_only_by_the_owner(links: Links) -> None:
    token = await server_token(links, user="U1")
    await links.confirm(token.token, "acme")
    refused = await links.unlink(LinkKind.SERVER, "slack", "T1", by_user="U2")
    assert refused.status is UnlinkStatus.NOT_OWNER
    assert refused.link is not None and refused.link.owner_name == "alice"
    assert await links.is_workspace_linked("slack", "T1")
    done = await links.unlink(LinkKind.SERVER, "slack", "T1", by_user="U1")
    assert done.status is UnlinkStatus.UNLINKED
    assert not await links.is_workspace_linked("slack", "T1")
    gone = await links.unlink(LinkKind.SERVER, "slack", "T1", by_user="U1")
    assert gone.status is UnlinkStatus.NOT_LINKED


async def test_after_unlink_a_new_token_can_link_again(links: Links) -> None:
    token = await server_token(links)
    link = await links.confirm(token.token, "acme")
    await links.delete("acme", link.id)
    again = await server_token(links)
    relinked = await links.confirm(again.token, "other")
    assert relinked.account == "other"
    assert [x.account for x in await links.list()] == ["other"]


async def test_a_token_never_starts_with_a_dash_which_a_command_line_takes_for_an_option(
    links: Links, monkeypatch: pytest.MonkeyPatch
) -> None:
    draws = iter(["-" + "a" * 42, "b" * 43])
    monkeypatch.setattr("storage.links.secrets.token_urlsafe", lambda n: next(draws))
    token = await server_token(links)
    assert token.token == "b" * 43
    assert (await links.peek(token.token)).state is TokenState.PENDING
