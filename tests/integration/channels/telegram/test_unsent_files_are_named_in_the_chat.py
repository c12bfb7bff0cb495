"""A file the agent meant to send that does not go out is named in the chat, with why in plain
words, instead of vanishing from the answer: one the sandbox refuses when it is read for sending
(gone since the tool call), and one the platform refuses at upload (too large, or any other
lasting refusal). Through the real manager on real Redis and aiogram against the fake Bot API,
with a graph that hands over files by reference (`file_graph`); a refusal recorded in the reply
ledger keeps its reason for the holder that sends the answer after a crash."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.attachments import refused_file
from channels.adapter import Chunk
from channels.manager import Manager
from channels.manager.turns.ledger import Piece, TurnRecord
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.integration.channels.telegram.file_graph import INLINE_TEXT, REPLY
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
FILE_GRAPH = "python:tests.integration.channels.telegram.file_graph:graph"


@pytest.fixture
async def stack(fake: FakeTelegram, make_manager) -> AsyncIterator[Manager]:  # type: ignore[no-untyped-def]
    manager = await make_manager(agent=FILE_GRAPH)
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        yield manager
    finally:
        await adapter.stop()


async def _answer(fake: FakeTelegram, manager: Manager, text: str, messages: int) -> list[str]:
    fake.say(fake.dm(ANN), ANN, text)
    await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= messages, timeout=30)
    await manager.idle()
    return fake.bot_texts(ANN["id"])


async def test_a_file_gone_before_sending_is_named_and_the_others_still_go(
    fake: FakeTelegram, stack: Manager, tmp_path: Path
) -> None:
    (tmp_path / "files" / "chart.txt").write_bytes(b"a chart\n")
    texts = await _answer(fake, stack, "attach out/report.pdf chart.txt", 2)
    assert texts == [REPLY, "(I couldn't attach report.pdf: it no longer exists.)"]
    (upload,) = fake.uploads
    assert upload["filename"] == "chart.txt" and upload["data"] == b"a chart\n"


async def test_an_upload_the_chat_finds_too_large_is_named_in_the_chat(
    fake: FakeTelegram, stack: Manager
) -> None:
    fake.fail_next("sendDocument", status=413, description="Request Entity Too Large")
    texts = await _answer(fake, stack, "inline notes.txt", 2)
    assert texts == [REPLY, "(I couldn't attach notes.txt: it is larger than this chat allows.)"]
    assert fake.uploads == []


async def test_an_upload_the_chat_refuses_is_named_without_the_platform_s_words(
    fake: FakeTelegram, stack: Manager
) -> None:
    fake.fail_next("sendDocument", description="Bad Request: wrong file identifier/HTTP URL")
    texts = await _answer(fake, stack, "inline notes.txt", 2)
    assert texts == [REPLY, "(I couldn't attach notes.txt: the chat refused the upload.)"]
    assert fake.uploads == []
    assert INLINE_TEXT.decode() not in " ".join(texts)


def test_a_recorded_refusal_keeps_its_reason_for_the_holder_that_sends_it() -> None:
    reply = Chunk(text=REPLY, plain=REPLY)
    gone = refused_file("report.pdf", "application/pdf", "it no longer exists")
    record = TurnRecord(("1-0",), "run", (Piece("chunk", chunk=reply), Piece("file", file=gone)))
    (_, piece) = TurnRecord.decode(record.encode()).pieces
    assert piece.file is not None
    assert (piece.file.name, piece.file.data, piece.file.note) == (
        "report.pdf",
        b"",
        "it no longer exists",
    )
