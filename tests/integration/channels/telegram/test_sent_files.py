"""Files the agent sends from the outbound-file directory (`<data>/files`), end to end: the demo
model's `send PATH` calls `send_file(path=PATH)`, the real manager on real Redis uploads the file
through aiogram to the fake Bot API. The checkpoint keeps a reference, never the bytes, and a
symlink inside the directory is refused, not followed."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from channels.manager import Manager
from channels.telegram.adapter import TelegramAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.support import wait_until

ANN = FakeTelegram.user(7, "Ann")
MB = 1024 * 1024


@pytest.fixture
async def stack(fake: FakeTelegram, make_manager) -> AsyncIterator[Manager]:  # type: ignore[no-untyped-def]
    manager = await make_manager()
    adapter = TelegramAdapter(token=TOKEN, deliver=manager.deliver, api_base=fake.base_url)
    manager.register(adapter)
    await adapter.start()
    try:
        yield manager
    finally:
        await adapter.stop()


async def _used_memory(client: aioredis.Redis, cluster: bool) -> int:
    if not cluster:
        return int((await client.info("memory"))["used_memory"])
    nodes = await client.info("memory", target_nodes="all")  # type: ignore[call-arg]
    return sum(int(info["used_memory"]) for info in nodes.values())


async def test_a_45_mb_file_reaches_the_chat_and_redis_grows_by_under_1_mb(
    fake: FakeTelegram,
    stack: Manager,
    tmp_path: Path,
    redis: aioredis.Redis,
    redis_cluster: bool,
) -> None:
    payload = os.urandom(45 * MB)
    (tmp_path / "files" / "big.bin").write_bytes(payload)
    before = await _used_memory(redis, redis_cluster)
    fake.say(fake.dm(ANN), ANN, "send big.bin")
    await wait_until(lambda: fake.uploads, timeout=60)
    await stack.idle()
    grown = await _used_memory(redis, redis_cluster) - before
    assert fake.bot_texts(ANN["id"]) == ["Here is big.bin."]
    (upload,) = fake.uploads
    assert upload["method"] == "sendDocument" and upload["filename"] == "big.bin"
    assert upload["data"] == payload
    assert grown < MB, f"Redis grew by {grown:,} bytes"


async def test_a_symlink_planted_in_the_files_dir_is_refused_at_send(
    fake: FakeTelegram, stack: Manager, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("the service's own secret")
    (tmp_path / "files" / "notes.txt").symlink_to(tmp_path / "secret.txt")
    fake.say(fake.dm(ANN), ANN, "send notes.txt")
    await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=30)
    await stack.idle()
    (text,) = fake.bot_texts(ANN["id"])
    assert text.startswith("Not sent: notes.txt goes through a symbolic link")
    assert fake.uploads == []
