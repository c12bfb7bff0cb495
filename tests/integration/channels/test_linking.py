"""Linking from chat, end to end: the manager with `access=linked`, a recording adapter, real
Redis, and link confirmation through the real HTTP app."""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from channels.message import InboundMessage, Platform
from service.http import build_http_app
from service.settings import Settings
from storage import Accounts, Keys, Links
from tests.fakes.recording_adapter import RecordingAdapter

PUBLIC_URL = "https://switchboard.example"
_ids = itertools.count(1)


def channel_msg(
    text: str, *, user: str = "U1", chat: str = "C1", workspace: str = "T1"
) -> InboundMessage:
    mid = f"m{next(_ids)}"
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id=workspace,
        chat_id=chat,
        sender_id=user,
        sender_name=f"name-{user}",
        text=text,
        provider_message_id=mid,
        mentions_bot=True,
        thread_anchor=mid,
    )


def dm_msg(text: str, *, user: str = "42") -> InboundMessage:
    return InboundMessage(
        platform=Platform.TELEGRAM,
        workspace_id="",
        chat_id=user,
        sender_id=user,
        sender_name="bob",
        text=text,
        provider_message_id=f"m{next(_ids)}",
        is_dm=True,
    )


@pytest.fixture
async def http(
    redis: aioredis.Redis, keys: Keys, prefix: str, tmp_path: Path
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """The HTTP app over the same Redis prefix as the manager, and an account's auth headers."""
    settings = Settings(_env_file=None, redis_prefix=prefix, data_dir=tmp_path)  # type: ignore[call-arg]
    accounts = Accounts(redis, keys=keys)
    key = await accounts.create("acme")

    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=settings, accounts=accounts, links=Links(redis, keys=keys), ready=ready
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as client:
        yield client, {"Authorization": f"Bearer {key}"}


async def linked_stack(make_manager, platform: Platform = Platform.SLACK):  # type: ignore[no-untyped-def]
    manager = await make_manager(access="linked", public_url=PUBLIC_URL)
    adapter = RecordingAdapter(platform=platform, deliver=manager.deliver, admins={"ADMIN"})
    manager.register(adapter)
    return manager, adapter


async def say(manager, msg: InboundMessage) -> None:  # type: ignore[no-untyped-def]
    await manager.deliver(msg)
    await manager.idle()


def token_in(text: str) -> str:
    match = re.search(rf"{re.escape(PUBLIC_URL)}/link/([A-Za-z0-9_-]+)", text)
    assert match, text
    return match.group(1)


async def test_unlinked_workspace_gets_one_notice_per_chat_and_no_replies(make_manager) -> None:
    manager, adapter = await linked_stack(make_manager)
    for _ in range(3):
        await say(manager, channel_msg("hello there"))
    await say(manager, channel_msg("hello from another channel", chat="C2"))
    assert adapter.sent == []
    notices = [text for _, text, _ in adapter.notices]
    assert len(notices) == 2
    assert notices[0].startswith("This Slack workspace isn't linked to Switchboard yet")
    assert "a workspace admin can run /link" in notices[0]


async def test_unlinked_dm_gets_link_instructions(make_manager) -> None:
    manager, adapter = await linked_stack(make_manager, Platform.TELEGRAM)
    await say(manager, dm_msg("hi"))
    await say(manager, dm_msg("hi again"))
    assert adapter.sent == []
    assert len(adapter.notices) == 1
    assert "Send /link" in adapter.notices[0][1]


async def test_non_admin_link_is_refused_privately(make_manager) -> None:
    manager, adapter = await linked_stack(make_manager)
    await say(manager, channel_msg("/link", user="U2"))
    [(_, text, private)] = adapter.notices
    assert private
    assert text.startswith("Only a workspace admin can link this Slack workspace")
    assert PUBLIC_URL not in text


async def test_admin_link_then_confirm_then_the_workspace_is_served(make_manager, http) -> None:  # type: ignore[no-untyped-def]
    client, auth = http
    manager, adapter = await linked_stack(make_manager)
    await say(manager, channel_msg("/link", user="ADMIN"))
    [(_, text, private)] = adapter.notices
    assert private and "30 minutes" in text
    token = token_in(text)

    info = await client.get(f"/api/links/tokens/{token}", headers=auth)
    assert info.status_code == 200 and info.json()["kind"] == "server"
    confirmed = await client.post(f"/api/links/tokens/{token}/confirm", headers=auth)
    assert confirmed.status_code == 201

    await say(manager, channel_msg("echo served now", user="U7"))
    assert adapter.texts() == ["served now"]


async def test_second_link_supersedes_the_first_url(make_manager, http) -> None:  # type: ignore[no-untyped-def]
    client, auth = http
    manager, adapter = await linked_stack(make_manager)
    await say(manager, channel_msg("/link", user="ADMIN"))
    await say(manager, channel_msg("/link", user="ADMIN"))
    first, second = (token_in(text) for _, text, _ in adapter.notices)
    old = await client.post(f"/api/links/tokens/{first}/confirm", headers=auth)
    assert old.status_code == 410
    new = await client.post(f"/api/links/tokens/{second}/confirm", headers=auth)
    assert new.status_code == 201


async def test_dm_link_confirm_serves_the_dm_and_owner_can_unlink(make_manager, http) -> None:  # type: ignore[no-untyped-def]
    client, auth = http
    manager, adapter = await linked_stack(make_manager, Platform.TELEGRAM)
    await say(manager, dm_msg("/link"))
    token = token_in(adapter.notices[-1][1])
    wrong = await client.post(f"/api/links/tokens/{token}/confirm", headers=auth)
    assert wrong.status_code == 400
    ok = await client.post(f"/api/links/user-tokens/{token}/confirm", headers=auth)
    assert ok.status_code == 201

    await say(manager, dm_msg("echo hello bot"))
    assert adapter.texts() == ["hello bot"]

    await say(manager, dm_msg("/unlink"))
    assert adapter.notices[-1][1] == "Your Telegram account is no longer linked to Switchboard."
    await say(manager, dm_msg("echo are you there"))
    assert adapter.texts() == ["hello bot"]


async def test_only_the_person_who_linked_can_unlink_the_workspace(make_manager, http) -> None:  # type: ignore[no-untyped-def]
    client, auth = http
    manager, adapter = await linked_stack(make_manager)
    await say(manager, channel_msg("/link", user="ADMIN"))
    token = token_in(adapter.notices[-1][1])
    await client.post(f"/api/links/tokens/{token}/confirm", headers=auth)

    await say(manager, channel_msg("/unlink", user="U2"))
    assert adapter.notices[-1][1].startswith("Only name-ADMIN can unlink this Slack workspace")
    await say(manager, channel_msg("/unlink", user="ADMIN"))
    assert adapter.notices[-1][1] == "This Slack workspace is no longer linked to Switchboard."
    await say(manager, channel_msg("echo still there?"))
    assert adapter.sent == []


async def test_link_when_already_linked_says_so(make_manager, http) -> None:  # type: ignore[no-untyped-def]
    client, auth = http
    manager, adapter = await linked_stack(make_manager)
    await say(manager, channel_msg("/link", user="ADMIN"))
    token = token_in(adapter.notices[-1][1])
    await client.post(f"/api/links/tokens/{token}/confirm", headers=auth)
    await say(manager, channel_msg("/link", user="ADMIN"))
    assert adapter.notices[-1][1].startswith("This Slack workspace is already linked")


async def test_console_is_served_even_in_linked_mode(make_manager) -> None:
    manager, adapter = await linked_stack(make_manager, Platform.CONSOLE)
    msg = InboundMessage(
        platform=Platform.CONSOLE,
        workspace_id="",
        chat_id="local",
        sender_id="me",
        sender_name="me",
        text="echo local",
        provider_message_id="c1",
        is_dm=True,
    )
    await say(manager, msg)
    assert adapter.texts() == ["local"]
    assert adapter.notices == []
