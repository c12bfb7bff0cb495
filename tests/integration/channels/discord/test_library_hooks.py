"""How the Discord client hooks discord.py, end to end (fake Discord ⇄ real discord.py ⇄
DiscordAdapter ⇄ the real manager on real Redis): with Discord's own endpoints it runs on
discord.py's stock HTTP client and webhook adapter, and when a discord.py upgrade moves what the
raw message tap hooks, messages still get answered (through `on_message`) and an error says so.

Each upgrade is simulated on discord.py itself, never on our modules: `monkeypatch` changes how
its `Client` builds the connection state, or how that state fills its parser table."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import discord
import pytest
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route
from discord.state import ConnectionState
from structlog.testing import capture_logs

from channels.discord import DiscordAdapter
from channels.discord.client import DEFAULT_API_BASE
from channels.message import InboundMessage
from tests.fakes.discord_server import FakeDiscord
from tests.integration.channels.discord.test_e2e import Stack
from tests.support import wait_until


def _state_factory_bypassed(monkeypatch: pytest.MonkeyPatch) -> None:
    """discord.py builds its connection state without calling `Client._get_state`."""
    original = discord.Client.__init__

    def init(self: discord.Client, *args: Any, **kwargs: Any) -> None:
        self._get_state = functools.partial(discord.Client._get_state, self)  # type: ignore[method-assign]  # the simulated upgrade
        original(self, *args, **kwargs)

    monkeypatch.setattr(discord.Client, "__init__", init)


def _parser_table_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """discord.py's parser table no longer calls an overridden `parse_message_create`."""
    original = ConnectionState.__init__

    def init(self: ConnectionState[Any], *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.parsers["MESSAGE_CREATE"] = functools.partial(
            ConnectionState.parse_message_create, self
        )

    monkeypatch.setattr(ConnectionState, "__init__", init)


UPGRADES: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "state_factory_bypassed": _state_factory_bypassed,
    "parser_table_changed": _parser_table_changed,
}


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    with capture_logs() as captured:
        yield captured


async def _stack(fake: FakeDiscord, make_manager: Any, api_base: str) -> AsyncIterator[Stack]:
    manager = await make_manager()
    seen: list[InboundMessage] = []

    async def deliver(msg: InboundMessage) -> None:
        await manager.deliver(msg)
        seen.append(msg)  # counted once durable: settle() then waits for it

    adapter = DiscordAdapter(
        token=fake.token, deliver=deliver, api_base=api_base, guild_ready_timeout=0.05
    )
    manager.register(adapter)
    await adapter.start()
    try:
        yield Stack(fake, manager, adapter, seen)
    finally:
        await adapter.stop()
        await fake.close()


@pytest.fixture(params=sorted(UPGRADES))
async def upgraded(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    make_manager: Any,
    logs: list[dict[str, Any]],
) -> AsyncIterator[Stack]:
    UPGRADES[request.param](monkeypatch)
    fake = await FakeDiscord().start()
    async for stack in _stack(fake, make_manager, fake.api_base):
        yield stack


async def test_messages_are_still_answered_once_when_an_upgrade_bypasses_the_raw_tap(
    upgraded: Stack, logs: list[dict[str, Any]]
) -> None:
    stack, fake = upgraded, upgraded.fake
    missing = [e for e in logs if e["event"] == "discord.message_tap_missing"]
    assert [e["log_level"] for e in missing] == ["error"]

    dm = await fake.user_message("hi", dm=True)
    await stack.settle(1)
    [reply] = stack.replies(dm["channel_id"])
    assert reply.startswith("Hello!")

    sent = await stack.mention("hello there")  # a guild mention: a thread, the reply in it
    await stack.settle(2)
    assert fake.threads[sent["id"]]["name"] == "hello there"
    assert stack.replies(sent["id"]) == ["You said: hello there"]

    await fake.user_message("recall", channel_id=sent["id"])  # the bot's thread: no mention
    await stack.settle(3)
    assert stack.replies(sent["id"])[-1] == "You first said: hello there"
    assert len(stack.seen) == 3  # each message delivered once; the bot's own echoes skipped
    assert [e for e in logs if e["event"] == "discord.message_tap_missing"] == missing


@pytest.fixture
async def stock(monkeypatch: pytest.MonkeyPatch, make_manager: Any) -> AsyncIterator[Stack]:
    """Discord's own endpoints: discord.py's built-in REST base and gateway, aimed at the fake
    for the test (the adapter is told nothing about it)."""
    fake = await FakeDiscord().start()
    monkeypatch.setattr(Route, "BASE", fake.api_base)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(fake.gateway_url))
    async for stack in _stack(fake, make_manager, DEFAULT_API_BASE):
        yield stack


async def test_default_endpoints_run_on_discord_pys_own_http_client_and_webhooks(
    stock: Stack,
) -> None:
    fake = stock.fake
    assert not fake.calls_to("GET", "/gateway/bot")  # no discovery: discord.py dialled its own
    dm = await fake.user_message("hi", dm=True)
    await stock.settle(1)
    assert stock.replies(dm["channel_id"])[0].startswith("Hello!")

    await fake.slash("help", dm=True)  # deferred and answered through discord.py's webhooks
    await wait_until(lambda: fake.followups)
    assert [c.type for c in fake.callbacks] == [5]

    sent = await stock.mention("hello there")
    await stock.settle(3)
    [answer] = fake.bot_messages(sent["id"])
    await fake.press(answer, answer["components"][0]["components"][0]["custom_id"])
    await stock.settle(4)
    assert [c.type for c in fake.callbacks] == [5, 6]  # the vote, deferred once
