"""Telegram's "/" menus: three scopes from the command registry, set only when they differ, so a
restart (or a second ingress process) reads them and sets nothing."""

from __future__ import annotations

import json

from channels.commands import COMMANDS
from channels.message import InboundMessage
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until


async def _ignore(msg: InboundMessage) -> None:
    return None


def _menu(fake: FakeTelegram, scope: str) -> list[str]:
    return [c["command"] for c in fake.menus[(json.dumps({"type": scope}), "")]]


async def _run_once(fake: FakeTelegram, *, mode: str = "polling") -> None:
    extra = {"webhook_url": "https://example.test/hook", "webhook_secret": "s3cret"}
    adapter = TelegramAdapter(
        token=TOKEN,
        deliver=_ignore,
        api_base=fake.base_url,
        mode=mode,  # type: ignore[arg-type]
        **(extra if mode == "webhook" else {}),  # type: ignore[arg-type]
    )
    await adapter.start()
    await adapter.stop()


async def test_private_chats_get_every_command_groups_the_public_ones_admins_also_link(
    fake: FakeTelegram,
) -> None:
    await _run_once(fake)
    assert _menu(fake, "all_private_chats") == [str(s.name) for s in COMMANDS]
    assert _menu(fake, "all_group_chats") == ["help", "new", "status", "stop", "queue", "usage"]
    assert _menu(fake, "all_chat_administrators") == [
        "help", "new", "status", "stop", "queue", "usage", "link", "unlink"
    ]  # fmt: skip
    descriptions = {
        c["command"]: c["description"]
        for c in fake.menus[(json.dumps({"type": "all_private_chats"}), "")]
    }
    assert descriptions == {str(s.name): s.description for s in COMMANDS}


async def test_a_restart_reads_the_menus_and_sends_none_again(fake: FakeTelegram) -> None:
    await _run_once(fake)
    await _run_once(fake, mode="webhook")
    assert len(fake.calls_to("setMyCommands")) == 3
    assert len(fake.calls_to("getMyCommands")) == 6


async def test_only_a_scope_that_differs_is_set_again(fake: FakeTelegram) -> None:
    await _run_once(fake)
    fake.menus[(json.dumps({"type": "all_group_chats"}), "")] = [
        {"command": "old", "description": "An older release's menu"}
    ]
    await _run_once(fake)
    sets = fake.calls_to("setMyCommands")
    assert len(sets) == 4 and sets[-1]["scope"] == {"type": "all_group_chats"}
    assert _menu(fake, "all_group_chats") == ["help", "new", "status", "stop", "queue", "usage"]


async def test_a_refused_menu_does_not_stop_the_bot(fake: FakeTelegram) -> None:
    fake.fail_next("getMyCommands", status=500, description="Internal Server Error")
    adapter = TelegramAdapter(token=TOKEN, deliver=_ignore, api_base=fake.base_url)
    await adapter.start()
    try:
        await wait_until(lambda: fake.calls_to("getUpdates"))
    finally:
        await adapter.stop()
