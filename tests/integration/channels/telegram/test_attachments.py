"""Telegram attachments end to end: the real aiogram client against the fake Bot API (getFile,
the file download route, sendPhoto/sendDocument multipart uploads), the real manager on real
Redis, the demo model (which says what it saw: "I see an image (WxH)", "I read <name>: ...")."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.demo import DEMO_FILE_TEXT
from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.openai_server import API_KEY
from tests.fakes.sample_files import pdf_bytes, png_bytes
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
REPORT = "Quarterly revenue grew by nine percent overall this year"


@pytest.fixture
async def stack(fake: FakeTelegram, make_manager) -> AsyncIterator[tuple[Manager, TelegramAdapter]]:  # type: ignore[no-untyped-def]
    manager = await make_manager(max_attachment_mb=0.05)  # 51 KiB: small enough to exceed
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        yield manager, adapter
    finally:
        await adapter.stop()


async def replies(fake: FakeTelegram, manager: Manager, count: int) -> list[str]:
    await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= count)
    await manager.idle()
    return fake.bot_texts(ANN["id"])


async def test_photo_with_caption_reaches_the_model_as_an_image_and_text(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, caption="what is this?", photo=png_bytes(640, 480))
    assert await replies(fake, manager, 1) == ["I see an image (640x480). You said: what is this?"]
    assert fake.downloads == ["f1"]  # the largest size, fetched once, not the thumbnail
    assert fake.calls_to("getFile") == [{"file_id": "f1"}]


async def test_pdf_alone_is_read_and_its_text_reaches_the_model(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, document=("report.pdf", pdf_bytes(REPORT), "application/pdf"))
    assert await replies(fake, manager, 1) == [
        "I read report.pdf: Quarterly revenue grew by nine percent overall this"
    ]


async def test_a_voice_note_reaches_the_model_as_its_transcript(
    fake: FakeTelegram,
    make_manager,
    openai_server,  # type: ignore[no-untyped-def]
) -> None:
    manager = await make_manager(
        transcribe_model="openai:whisper-1",
        openai_base_url=openai_server.base_url,
        openai_api_key=API_KEY,
    )
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        fake.say(fake.dm(ANN), ANN, voice=b"OggS what is the weather like in Lisbon today")
        assert await replies(fake, manager, 1) == [
            "I heard voice.ogg: what is the weather like in Lisbon today"
        ]
    finally:
        await adapter.stop()
    assert openai_server.transcriptions == [("whisper-1", "voice.ogg", 45)]


async def test_without_a_transcriber_a_voice_note_is_named_not_heard(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, voice=b"OggS what is the weather like in Lisbon today")
    assert await replies(fake, manager, 1) == ["I can't read voice.ogg."]


async def test_text_document_content_reaches_the_model(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    notes = b"Buy milk and eggs before the shop closes tonight"
    fake.say(fake.dm(ANN), ANN, caption="my list", document=("notes.txt", notes, "text/plain"))
    assert await replies(fake, manager, 1) == [
        "I read notes.txt: Buy milk and eggs before the shop closes You said: my list"
    ]


async def test_oversize_file_gets_a_notice_and_the_caption_is_still_answered(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    chat = fake.dm(ANN)
    fake.say(chat, ANN, caption="echo the caption", photo=png_bytes(8, 8), file_size=5_000_000)
    texts = await replies(fake, manager, 2)
    assert texts[0] == "photo.jpg (4.8 MB) is over my 0.05 MB limit for files, so I left it out."
    assert texts[1] == "the caption"
    assert fake.downloads == [] and fake.calls_to("getFile") == []  # refused before fetching


async def test_oversize_file_alone_gets_only_the_notice_and_no_model_call(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    big = pdf_bytes(REPORT) + b"%" * 80_000  # the update says 100 bytes; getFile knows better
    fake.say(fake.dm(ANN), ANN, document=("big.pdf", big, "application/pdf"), file_size=100)
    assert await replies(fake, manager, 1) == [
        "big.pdf (0.1 MB) is over my 0.05 MB limit for files, so I left it out."
    ]
    assert fake.downloads == []
    assert fake.calls_to("sendChatAction") == []  # no turn ran


async def test_queued_message_keeps_its_attachment(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    chat = fake.dm(ANN)
    fake.say(chat, ANN, "slow 1")
    await wait_until(lambda: fake.calls_to("sendChatAction"))  # the turn is running
    fake.say(chat, ANN, caption="and this?", photo=png_bytes(300, 200))
    texts = await replies(fake, manager, 2)
    assert texts == ["Done after 1 s.", "I see an image (300x200). You said: and this?"]


async def test_file_made_by_the_agent_is_uploaded_natively_after_the_reply(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter]
) -> None:
    manager, _ = stack
    fake.say(fake.dm(ANN), ANN, "file summary.txt")
    assert await replies(fake, manager, 1) == ["Here is summary.txt."]
    await wait_until(lambda: fake.uploads)
    (upload,) = fake.uploads
    assert upload["method"] == "sendDocument" and upload["chat_id"] == ANN["id"]
    assert upload["filename"] == "summary.txt" and upload["data"] == DEMO_FILE_TEXT.encode()
    methods = [c.method for c in fake.calls if c.method in ("sendMessage", "sendDocument")]
    assert methods == ["sendMessage", "sendDocument"]  # the file follows the reply


async def test_file_urls_with_the_token_never_reach_the_logs(
    fake: FakeTelegram, stack: tuple[Manager, TelegramAdapter], capfd: pytest.CaptureFixture[str]
) -> None:
    manager, _ = stack
    fake.files.pop("p1")  # getFile now fails for the default caption photo
    fake.say(fake.dm(ANN), ANN, caption="echo still here")
    texts = await replies(fake, manager, 2)
    assert texts == ["I couldn't download photo.jpg, so I left it out.", "still here"]
    out, err = capfd.readouterr()
    assert TOKEN not in out + err and TOKEN.split(":")[1] not in out + err
