"""A hard link in the outbound-file directory is refused, never sent: the path walk refuses
symlinks, but a hard link is the outside file itself under a second name (here the service's
own secret), so only its link count, read from the opened descriptor, gives it away. Through
the real manager on real Redis and aiogram against the fake Bot API, both where the agent's
files are read: the `send_file` tool (the demo model's `send PATH`), and the read at send time
of a reference in a graph's `files` (a link planted after the tool call)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.integration.channels.telegram.file_graph import REPLY
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
SECRET = b"SWITCHBOARD_TELEGRAM_TOKEN=the-service-s-own-secret\n"
FILE_GRAPH = "python:tests.integration.channels.telegram.file_graph:graph"

Stack = Callable[..., Awaitable[Manager]]


@pytest.fixture
async def start(fake: FakeTelegram, make_manager) -> AsyncIterator[Stack]:  # type: ignore[no-untyped-def]
    adapters: list[TelegramAdapter] = []

    async def started(**overrides: object) -> Manager:
        manager: Manager = await make_manager(**overrides)
        adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
        manager.register(adapter)
        await adapter.start()
        adapters.append(adapter)
        return manager

    try:
        yield started
    finally:
        for adapter in adapters:
            await adapter.stop()


def _secret_outside(tmp_path: Path) -> Path:
    secret = tmp_path / ".env"
    secret.write_bytes(SECRET)
    return secret


def _nothing_secret_reached_the_chat(fake: FakeTelegram) -> None:
    assert all(SECRET not in upload["data"] for upload in fake.uploads)
    assert all("secret" not in text for text in fake.bot_texts(ANN["id"]))


async def test_send_file_refuses_a_hard_link_to_a_file_outside_the_directory(
    fake: FakeTelegram, start: Stack, tmp_path: Path
) -> None:
    manager = await start()
    os.link(_secret_outside(tmp_path), tmp_path / "files" / "notes.txt")
    fake.say(fake.dm(ANN), ANN, "send notes.txt")
    await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=30)
    await manager.idle()
    (text,) = fake.bot_texts(ANN["id"])
    assert text.startswith("Not sent: notes.txt is a hard link")
    assert fake.uploads == []
    _nothing_secret_reached_the_chat(fake)


async def test_a_file_with_a_single_link_is_still_sent(
    fake: FakeTelegram, start: Stack, tmp_path: Path
) -> None:
    manager = await start()
    (tmp_path / "files" / "report.txt").write_bytes(b"quarterly numbers\n")
    fake.say(fake.dm(ANN), ANN, "send report.txt")
    await wait_until(lambda: fake.uploads, timeout=30)
    await manager.idle()
    (upload,) = fake.uploads
    assert upload["filename"] == "report.txt" and upload["data"] == b"quarterly numbers\n"


async def test_a_hard_link_read_at_send_time_is_named_in_the_chat_and_not_sent(
    fake: FakeTelegram, start: Stack, tmp_path: Path
) -> None:
    manager = await start(agent=FILE_GRAPH)
    os.link(_secret_outside(tmp_path), tmp_path / "files" / "notes.txt")
    (tmp_path / "files" / "report.txt").write_bytes(b"quarterly numbers\n")
    fake.say(fake.dm(ANN), ANN, "attach notes.txt report.txt")
    await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 2 and fake.uploads, timeout=30)
    await manager.idle()
    assert fake.bot_texts(ANN["id"]) == [
        REPLY,
        "(I couldn't attach notes.txt: it is a link to another file, which I don't send.)",
    ]
    (upload,) = fake.uploads
    assert upload["filename"] == "report.txt" and upload["data"] == b"quarterly numbers\n"
    _nothing_secret_reached_the_chat(fake)
