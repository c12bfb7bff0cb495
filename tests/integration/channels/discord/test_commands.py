"""Discord application commands: fake Discord (REST + gateway) ⇄ real discord.py (`app_commands`)
⇄ DiscordAdapter ⇄ the real manager (real Redis, demo model). Commands are registered from the
registry only when Discord's differ, acknowledged within Discord's 3 s, and answered through the
interaction token (privately where the registry says), by whichever process works the inbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from channels.commands import COMMANDS
from channels.discord import DiscordAdapter
from channels.manager import Manager
from tests.fakes.discord_server import FakeDiscord
from tests.support import wait_until

Start = Callable[..., Awaitable[DiscordAdapter]]


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def start(fake: FakeDiscord) -> AsyncIterator[Start]:
    """Start an adapter on the fake (receiving unless told otherwise); all stopped at the end."""
    started: list[DiscordAdapter] = []

    async def factory(manager: Manager | None = None, **kw: Any) -> DiscordAdapter:
        receive = kw.pop("receive", True)

        async def nowhere(msg: Any) -> None:
            return None

        adapter = DiscordAdapter(
            token=fake.token,
            deliver=kw.pop("deliver", manager.deliver if manager else nowhere),
            api_base=fake.api_base,
            guild_ready_timeout=0.05,
            **kw,
        )
        if manager is not None:
            manager.register(adapter)
        started.append(adapter)
        await adapter.start(receive=receive)
        return adapter

    try:
        yield factory
    finally:
        for adapter in started:
            await adapter.stop()


def puts(fake: FakeDiscord) -> int:
    return len(fake.calls_to("PUT", r"/applications/\d+(/guilds/\d+)?/commands"))


async def test_every_command_is_registered_globally_with_its_description(
    fake: FakeDiscord, start: Start
) -> None:
    await start()
    registered = {c["name"]: c for c in fake.app_commands[None]}
    assert list(registered) == [str(spec.name) for spec in COMMANDS]
    assert {n: c["description"] for n, c in registered.items()} == {
        str(spec.name): spec.description for spec in COMMANDS
    }
    admin_only = {n for n, c in registered.items() if c["default_member_permissions"] == "32"}
    assert admin_only == {"link", "unlink"}  # Manage Server
    assert all(c["contexts"] == [0, 1] for c in registered.values())  # servers and bot DMs


async def test_a_restart_reads_the_commands_and_registers_nothing(
    fake: FakeDiscord, start: Start
) -> None:
    first = await start()
    await first.stop()
    await start()
    assert puts(fake) == 1
    assert len(fake.calls_to("GET", r"/applications/\d+/commands")) == 2


async def test_commands_that_differ_on_discord_are_registered_again(
    fake: FakeDiscord, start: Start
) -> None:
    first = await start()
    await first.stop()
    fake.app_commands[None][0]["description"] = "An older release's words"
    await start()
    assert puts(fake) == 2
    assert fake.app_commands[None][0]["description"] == COMMANDS[0].description


async def test_configured_guilds_get_the_commands_and_global_is_left_alone(
    fake: FakeDiscord, start: Start
) -> None:
    await start(command_guilds=[int(fake.guild_id)])
    assert [c["name"] for c in fake.app_commands[fake.guild_id]] == [str(s.name) for s in COMMANDS]
    assert None not in fake.app_commands


async def test_a_worker_registers_nothing(fake: FakeDiscord, start: Start) -> None:
    await start(receive=False)
    assert fake.calls_to("GET", r"/applications/\d+/commands") == [] and puts(fake) == 0


async def test_usage_is_deferred_privately_within_3_s_and_answered_only_to_the_user(
    fake: FakeDiscord, start: Start, make_manager: Any
) -> None:
    manager = await make_manager()
    await start(manager)
    sent = await fake.slash("usage")
    await wait_until(lambda: fake.followups)
    await manager.idle()
    [callback] = fake.callbacks
    assert callback.interaction_id == sent["id"]
    assert callback.type == 5 and callback.ephemeral and callback.after_s < 3.0
    [answer] = fake.followups
    assert answer.ephemeral and answer.replaced_thinking
    assert answer.user_id == fake.alice["id"] and answer.content == "No usage limits are set here."
    assert fake.bot_messages(fake.channel_id) == []  # nothing said in the channel


async def test_help_in_a_dm_is_private_too(
    fake: FakeDiscord, start: Start, make_manager: Any
) -> None:
    manager = await make_manager()
    await start(manager)
    await fake.slash("help", dm=True)
    await wait_until(lambda: fake.followups)
    [answer] = fake.followups
    assert answer.ephemeral and "/new — " in answer.content


async def test_stop_from_the_slash_command_cancels_the_turn_running_in_that_thread(
    fake: FakeDiscord, start: Start, make_manager: Any
) -> None:
    manager = await make_manager(streaming="off")
    await start(manager)
    sent = await fake.user_message(f"<@{fake.bot['id']}> slow 20")
    await wait_until(lambda: sent["id"] in fake.threads)
    await wait_until(lambda: fake.calls_to("POST", rf"/channels/{sent['id']}/typing"))
    await fake.slash("stop", channel_id=sent["id"])
    await wait_until(lambda: fake.followups)
    [answer] = fake.followups
    assert answer.content == "Stopping the current answer."
    assert not answer.ephemeral  # stop acts on the thread: everyone there sees it
    await manager.idle(timeout=10)
    assert "Stopped." in [m["content"] for m in fake.bot_messages(sent["id"])]


async def test_link_is_refused_without_manage_server_and_offered_with_it(
    fake: FakeDiscord, start: Start, make_manager: Any
) -> None:
    manager = await make_manager(access="linked")
    await start(manager)
    await fake.slash("link", user=fake.bob)  # a server let everyone see it: checked again
    await wait_until(lambda: len(fake.followups) == 1)
    refused = fake.followups[0]
    assert refused.ephemeral and "Only" in refused.content and "/link/" not in refused.content
    await fake.slash("link", user=fake.carol)
    await wait_until(lambda: len(fake.followups) == 2)
    offered = fake.followups[1]
    assert offered.ephemeral and offered.user_id == fake.carol["id"]
    assert "/link/" in offered.content


async def test_any_worker_answers_an_interaction_another_process_received(
    fake: FakeDiscord, start: Start, make_manager: Any
) -> None:
    manager = await make_manager()
    worker = await start(manager, receive=False)  # the manager answers through this one
    await start(deliver=manager.deliver)  # the ingress: receives, defers, appends
    await fake.slash("status")
    await wait_until(lambda: fake.followups)
    [answer] = fake.followups
    assert answer.ephemeral and answer.content.startswith("No conversation yet here.")
    assert worker is not None


async def test_an_expired_interaction_is_answered_by_direct_message(
    fake: FakeDiscord, start: Start, make_manager: Any
) -> None:
    manager = await make_manager()
    await start(manager)
    fake.ack_deadline_s = 0.0  # too late for the defer, as after a long pause
    fake.expire_interactions()
    await fake.slash("help")
    dm = fake.dm_channel(fake.alice)
    await wait_until(lambda: fake.bot_messages(dm))
    assert "Commands:" in fake.bot_messages(dm)[0]["content"]
    assert fake.followups == []


async def test_stop_in_a_channel_acts_on_that_channel(
    fake: FakeDiscord, start: Start, make_manager: Any
) -> None:
    manager = await make_manager()
    await start(manager)
    await fake.slash("stop")
    await wait_until(lambda: fake.followups)
    [answer] = fake.followups
    assert answer.content == "Nothing is running here." and not answer.ephemeral


@pytest.mark.parametrize("kind", [3, 1], ids=["message_context_menu", "slash"])
async def test_a_command_we_do_not_have_is_answered_privately_without_a_traceback(
    fake: FakeDiscord, start: Start, caplog: pytest.LogCaptureFixture, kind: int
) -> None:
    """A stale command (Discord's clients cache the list; another build registered it) makes
    discord.py's tree raise CommandNotFound: the person is told, only them, and nothing is
    logged as an error with a traceback."""
    delivered: list[Any] = []

    async def deliver(msg: Any) -> None:
        delivered.append(msg)

    await start(deliver=deliver)
    target = await fake.user_message("something to act on")
    with caplog.at_level("DEBUG", logger="discord"):
        name = "Summarise thread" if kind == 3 else "summarise"
        sent = await fake.stale_command(name, target=target, kind=kind)
        await wait_until(lambda: fake.callbacks)
    [callback] = fake.callbacks
    assert (callback.interaction_id, callback.type, callback.ephemeral) == (sent["id"], 4, True)
    assert "no longer available" in callback.content
    assert not [r for r in caplog.records if r.levelno >= 40 or r.exc_info]
    assert delivered == []
