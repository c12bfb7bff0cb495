"""Discord's Stop button end to end: fake Discord ⇄ real discord.py ⇄ DiscordAdapter ⇄ the real
manager (real Redis, demo model, streaming on). A reply being written carries a Stop button;
someone else's press is refused to them alone, the asker's stops the run as `/stop` does (the
text so far kept, marked stopped), and the button is gone once the reply settles. Whose answer it
is comes from the manager's state: a custom id a client made up names no one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from channels.discord import DiscordAdapter
from channels.manager import Manager
from tests.fakes.discord_server import FakeDiscord
from tests.support import wait_until


@pytest.fixture
async def running(make_manager: Any) -> AsyncIterator[tuple[FakeDiscord, Manager]]:
    fake = await FakeDiscord().start()
    manager = await make_manager(streaming="on")
    adapter = DiscordAdapter(
        token=fake.token, deliver=manager.deliver, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    manager.register(adapter)
    await adapter.start()
    try:
        yield fake, manager
    finally:
        await adapter.stop()
        await fake.close()


def _stop_button(message: dict[str, Any]) -> dict[str, Any] | None:
    for row in message.get("components") or ():
        for button in row.get("components") or ():
            if str(button.get("custom_id", "")).split(":")[0] == "stop":
                return button
    return None


async def test_only_the_asker_can_stop_a_reply_being_written(
    running: tuple[FakeDiscord, Manager],
) -> None:
    fake, manager = running
    sent = await fake.user_message(f"<@{fake.bot['id']}> drip 100")  # about ten seconds
    thread = sent["id"]
    await wait_until(
        lambda: any(
            _stop_button(m) and len(m["content"].split()) >= 3 for m in fake.bot_messages(thread)
        )
    )
    (streaming,) = fake.bot_messages(thread)
    button = _stop_button(streaming)
    assert button is not None

    await fake.press(streaming, button["custom_id"], user=fake.bob)
    await wait_until(lambda: len(fake.followups) == 1)
    (refused,) = fake.followups
    assert refused.ephemeral and refused.user_id == fake.bob["id"]  # only bob sees it
    assert refused.content.startswith("Only ")
    assert not any("(stopped)" in m["content"] for m in fake.bot_messages(thread))  # nothing stops

    await fake.press(streaming, button["custom_id"])  # alice asked
    await wait_until(lambda: any("(stopped)" in m["content"] for m in fake.bot_messages(thread)))
    await manager.idle()
    kept = next(m for m in fake.bot_messages(thread) if "(stopped)" in m["content"])
    words = kept["content"].replace("*(stopped)*", "").replace("(stopped)", "").split()
    assert words[:3] == ["w1", "w2", "w3"] and "w100" not in words
    assert _stop_button(kept) is None  # the button went with the stream
    assert not any("w100" in m["content"] for m in fake.bot_messages(thread))


async def test_a_press_with_a_custom_id_naming_the_presser_stops_nothing(
    running: tuple[FakeDiscord, Manager],
) -> None:
    fake, manager = running
    sent = await fake.user_message(f"<@{fake.bot['id']}> drip 100")
    thread = sent["id"]
    await wait_until(lambda: any(_stop_button(m) for m in fake.bot_messages(thread)))
    (streaming,) = fake.bot_messages(thread)
    await fake.press(
        streaming, f"stop:{fake.bob['id']}", user=fake.bob
    )  # bob claims to be the asker
    await wait_until(lambda: len(fake.followups) == 1)
    assert fake.followups[0].ephemeral and fake.followups[0].content.startswith("Only ")
    await manager.idle(timeout=30)
    assert any("w100" in m["content"] for m in fake.bot_messages(thread))  # written to the end
