"""Discord slash commands: the wire payload as a native command, and when a sync is due."""

from __future__ import annotations

from typing import Any

import discord

from channels.commands import COMMANDS
from channels.discord.commands import build_tree, local_commands, needs_sync
from channels.discord.events import command_to_inbound
from channels.message import DiscordHandle


def interaction(name: str, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "900",
        "application_id": "42",
        "type": 2,
        "token": "itoken-900",
        "channel_id": "77",
        "channel": {"id": "77", "type": 0},
        "guild_id": "5",
        "member": {
            "user": {"id": "11", "username": "alice", "global_name": "Alice"},
            "nick": None,
            "permissions": "32",
        },
        "data": {"id": "300", "name": name, "type": 1},
    }
    data.update(fields)
    return data


def test_a_command_becomes_its_slash_text_with_the_answer_handles() -> None:
    msg = command_to_inbound(interaction("usage"))
    assert msg is not None and msg.text == "/usage" and msg.native is not None
    assert (msg.native.name, msg.native.private, msg.native.place) == ("usage", True, "group")
    assert (msg.native.application_id, msg.native.token) == ("42", "itoken-900")
    assert msg.provider_message_id == "900" and msg.sender_name == "Alice"
    assert msg.handle == DiscordHandle(channel_id="77", permissions="32")  # no token kept twice


def test_options_become_arguments_and_the_place_follows_the_channel() -> None:
    options = {"id": "300", "name": "link", "type": 1, "options": [{"name": "x", "value": "a b"}]}
    msg = command_to_inbound(interaction("link", data=options, channel={"id": "77", "type": 11}))
    assert msg is not None and msg.text == "/link a b" and msg.native is not None
    assert msg.native.place == "thread"


def test_in_a_dm_the_user_is_the_sender_and_stop_is_not_private() -> None:
    dm = interaction("stop", guild_id=None, member=None, user={"id": "11", "username": "a"})
    msg = command_to_inbound(dm)
    assert msg is not None and msg.is_dm and msg.sender_id == "11" and msg.native is not None
    assert msg.native.place == "dm" and not msg.native.private


def test_other_interactions_are_not_commands() -> None:
    assert command_to_inbound(interaction("help", type=3)) is None
    assert command_to_inbound(interaction("help", token="")) is None


def test_what_discord_holds_is_compared_without_its_ids_and_order() -> None:
    async def handler(interaction: discord.Interaction, spec: Any) -> None:
        return None

    tree = build_tree(discord.Client(intents=discord.Intents.none()), handler)
    local = local_commands(tree, None)
    assert [c["name"] for c in local] == [str(s.name) for s in COMMANDS]
    stored = [
        {**c, "id": str(n), "version": "1", "application_id": "42"}
        | {"default_member_permissions": None if c["default_member_permissions"] is None
           else str(c["default_member_permissions"])}
        for n, c in enumerate(reversed(local))
    ]  # fmt: skip
    assert not needs_sync(local, stored)
    assert needs_sync(local, stored[1:])
    stored[0] = {**stored[0], "description": "changed"}
    assert needs_sync(local, stored)
