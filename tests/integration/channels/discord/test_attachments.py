"""Discord attachments end to end: attachments read from the (fake, signed-URL) CDN reach the
demo model; a file the agent makes is sent as a message with a `discord.File` (multipart)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.demo import DEMO_FILE_TEXT
from channels.discord import DiscordAdapter
from channels.message import InboundMessage
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.sample_files import pdf_bytes, png_bytes
from tests.integration.channels.discord.test_e2e import Stack


@pytest.fixture
async def stack(make_manager) -> AsyncIterator[Stack]:  # type: ignore[no-untyped-def]
    fake = await FakeDiscord().start()
    manager = await make_manager(max_attachment_mb=0.05)
    seen: list[InboundMessage] = []

    async def deliver(msg: InboundMessage) -> None:
        await manager.deliver(msg)
        seen.append(msg)  # counted once durable: settle() then waits for it

    adapter = DiscordAdapter(
        token=fake.token, deliver=deliver, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    manager.register(adapter)
    await adapter.start()
    try:
        yield Stack(fake, manager, adapter, seen)
    finally:
        await adapter.stop()
        await fake.close()


async def test_photo_with_text_in_a_dm_reaches_the_model_as_an_image(stack: Stack) -> None:
    sent = await stack.fake.user_message(
        "what is this?", dm=True, files=[("cat.png", png_bytes(800, 600), "image/png")]
    )
    await stack.settle(1)
    assert stack.replies(sent["channel_id"]) == [
        "I see an image (800x600). You said: what is this?"
    ]
    assert stack.fake.downloads == [sent["attachments"][0]["id"]]


async def test_pdf_text_reaches_the_model_and_an_oversize_file_gets_a_notice(
    stack: Stack,
) -> None:
    files = [
        ("q3.pdf", pdf_bytes("Revenue grew nine percent"), "application/pdf"),
        ("huge.bin", b"\x00" * 200_000, "application/octet-stream"),
    ]
    sent = await stack.fake.user_message("", dm=True, files=files)
    await stack.settle(1)
    assert stack.replies(sent["channel_id"]) == [
        "huge.bin (0.2 MB) is over my 0.05 MB limit for files, so I left it out.",
        "I read q3.pdf: Revenue grew nine percent",
    ]
    assert stack.fake.downloads == [sent["attachments"][0]["id"]]


async def test_file_made_by_the_agent_is_sent_as_a_native_attachment(stack: Stack) -> None:
    sent = await stack.mention("file report.txt")
    await stack.settle(1)
    (upload,) = stack.fake.uploads
    thread = upload["channel_id"]
    assert thread != sent["channel_id"]  # into the thread made for the mention
    assert stack.replies(thread) == ["Here is report.txt.", ""]
    assert upload["filename"] == "report.txt" and upload["data"] == DEMO_FILE_TEXT.encode()
