"""How the Discord client hooks discord.py, without sockets: stock classes for Discord's own
endpoints, the voice warning filtered in our logging only, the read gate stepping aside when the
socket it wraps changes shape, and interaction payloads rebuilt from public attributes."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any, cast

import discord
import pytest
from discord.http import HTTPClient
from structlog.testing import capture_logs

from channels.discord.adapter import INTENTS
from channels.discord.client import (
    DEFAULT_API_BASE,
    GatedSocket,
    RoutedHTTP,
    SwitchboardClient,
    gate_reads,
    interaction_payload,
    webhooks_for,
)
from channels.discord.events import command_to_inbound, stop_to_inbound, vote_to_inbound
from channels.message import InboundMessage

APP = "900"


def client(**kw: Any) -> SwitchboardClient:
    return SwitchboardClient(
        intents=INTENTS,
        guild_ready_timeout=0.05,
        on_ready=lambda: None,
        on_message_payload=lambda payload: None,
        on_press=lambda interaction: None,
        **kw,
    )


def test_default_endpoints_keep_discord_pys_own_http_client_and_webhook_adapter() -> None:
    stock = client()
    assert type(stock.http) is HTTPClient and webhooks_for(DEFAULT_API_BASE) is None
    assert stock.tapped


def test_other_endpoints_get_the_routed_http_client_and_webhook_adapter() -> None:
    assert isinstance(client(api_base="http://127.0.0.1:9/api/v10").http, RoutedHTTP)
    assert isinstance(client(gateway_url="ws://127.0.0.1:9/gw").http, RoutedHTTP)
    assert webhooks_for("http://127.0.0.1:9/api/v10") is not None


def test_voice_warning_is_dropped_in_our_logging_without_flipping_discord_py_flags(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(discord.VoiceClient, "warn_nacl", True)  # as without PyNaCl installed
    monkeypatch.setattr(discord.VoiceClient, "warn_dave", True)
    caplog.set_level(logging.WARNING, logger="discord")
    client()
    logging.getLogger("discord.client").warning("something else")
    said = [r.getMessage() for r in caplog.records if r.name == "discord.client"]
    assert said == ["something else"]


class Socket:
    def __init__(self) -> None:
        self.reads = 0

    async def receive(self, timeout: float | None = None) -> str:
        self.reads += 1
        return "frame"


class OtherSocket:
    """A socket of another shape: no `receive(timeout=)`."""

    async def recv(self) -> str:
        return "frame"


class FakeHTTP:
    def __init__(self, socket: object) -> None:
        self.socket = socket
        self.connects: list[tuple[str, int]] = []

    async def ws_connect(self, url: str, *, compress: int = 0) -> object:
        self.connects.append((url, compress))
        return self.socket


async def test_gated_socket_reads_only_while_the_gate_is_set() -> None:
    gate = asyncio.Event()
    socket = Socket()
    http = FakeHTTP(socket)
    gate_reads(cast(HTTPClient, http), gate)
    gated = await http.ws_connect("wss://gateway")
    assert isinstance(gated, GatedSocket)
    read = asyncio.create_task(gated.receive(timeout=5))
    await asyncio.sleep(0.05)
    assert socket.reads == 0 and not read.done()
    gate.set()
    assert await read == "frame" and socket.reads == 1
    assert await http.ws_connect("wss://voice", compress=15) is socket  # voice: never gated


async def test_read_gate_steps_aside_for_a_socket_of_another_shape_and_says_so_once() -> None:
    socket = OtherSocket()
    http = FakeHTTP(socket)
    gate_reads(cast(HTTPClient, http), asyncio.Event())
    with capture_logs() as logs:
        assert await http.ws_connect("wss://gateway") is socket
        assert await http.ws_connect("wss://gateway") is socket  # a reconnect
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("discord.read_gate_unavailable", "error")
    ]
    assert http.connects == [("wss://gateway", 0)] * 2


def test_read_gate_leaves_a_ws_connect_that_is_no_coroutine_function_alone() -> None:
    class SyncHTTP:
        def ws_connect(self, url: str) -> object:
            return Socket()

    http = SyncHTTP()
    with capture_logs() as logs:
        gate_reads(cast(HTTPClient, http), asyncio.Event())
    assert "ws_connect" not in vars(http) and [e["event"] for e in logs] == [
        "discord.read_gate_unavailable"
    ]


# -- interactions rebuilt from public attributes -----------------------------------------------


def user(uid: str, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": uid,
        "username": name,
        "discriminator": "0",
        "global_name": name.capitalize(),
        "avatar": None,
        "bot": bot,
    }


ALICE = user("11", "alice")
BOT = user("1", "switchboard", bot=True)
CHANNEL = {  # a public thread, as Discord sends it with an interaction
    "id": "300",
    "type": 11,
    "guild_id": "200",
    "parent_id": "301",
    "owner_id": "11",
    "name": "t",
    "message_count": 0,
    "member_count": 1,
    "rate_limit_per_user": 0,
    "flags": 0,
    "thread_metadata": {
        "archived": False,
        "auto_archive_duration": 1440,
        "archive_timestamp": "2024-01-01T00:00:00+00:00",
        "locked": False,
    },
}


def wire(kind: int, data: dict[str, Any], *, guild: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "500",
        "application_id": APP,
        "type": kind,
        "token": "itoken-500",
        "version": 1,
        "channel_id": "300" if guild else "400",
        "channel": CHANNEL if guild else {"id": "400", "type": 1},
        "data": data,
        "locale": "en-US",
        "app_permissions": "0",
        "attachment_size_limit": 1024,
        "entitlements": [],
        "authorizing_integration_owners": {},
    }
    if guild:
        payload["guild_id"] = "200"
        payload["member"] = {
            "user": ALICE,
            "nick": "Ali",
            "roles": [],
            "joined_at": "2024-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "flags": 0,
            "permissions": str(1 << 5),
        }
    else:
        payload["user"] = ALICE
    if kind == 3:
        payload["message"] = {
            "id": "600",
            "channel_id": payload["channel_id"],
            "author": BOT,
            "content": "answer",
            "timestamp": "2024-01-01T00:00:00+00:00",
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
        }
    return payload


def rebuilt(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` as discord.py's `Interaction` holds it, turned back into a payload."""
    state = client()._connection  # discord.py's own state, after READY named the bot
    state.user = discord.ClientUser(state=state, data=cast(Any, BOT))
    return interaction_payload(discord.Interaction(data=cast(Any, payload), state=state))


def without_raw(msg: InboundMessage | None) -> InboundMessage:
    assert msg is not None
    return replace(msg, raw=None)


@pytest.mark.parametrize("guild", [True, False], ids=["guild", "dm"])
def test_a_rebuilt_command_payload_makes_the_same_message_as_discords(guild: bool) -> None:
    payload = wire(2, {"id": "7", "name": "link", "type": 1}, guild=guild)
    assert command_to_inbound(rebuilt(payload)) == command_to_inbound(payload)


@pytest.mark.parametrize("guild", [True, False], ids=["guild", "dm"])
def test_rebuilt_press_payloads_make_the_same_messages_as_discords(guild: bool) -> None:
    vote = wire(3, {"custom_id": "fb:up:run-1", "component_type": 2}, guild=guild)
    assert without_raw(vote_to_inbound(rebuilt(vote))) == without_raw(vote_to_inbound(vote))
    stop = wire(3, {"custom_id": "stop:11", "component_type": 2}, guild=guild)
    assert stop_to_inbound(rebuilt(stop)) == stop_to_inbound(stop)
    if guild:
        assert rebuilt(stop)["member"]["permissions"] == str(1 << 5)
