"""A failure a user is told about is kept by its reference id, with where it happened."""

from __future__ import annotations

import re

import redis.asyncio as aioredis

from channels.message import InboundMessage, Platform
from storage import FailureLog, Keys
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until


async def test_failed_turn_is_findable_by_the_reference_in_its_reply(
    make_manager, redis: aioredis.Redis, keys: Keys
) -> None:
    manager = await make_manager()
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    await manager.deliver(
        InboundMessage(
            platform=Platform.SLACK,
            workspace_id="T1",
            chat_id="D9",
            sender_id="U1",
            sender_name="alice",
            text="boom",
            provider_message_id="m-boom",
            is_dm=True,
        )
    )
    await manager.idle()
    match = re.search(r"\(ref ([0-9a-f]{8})\)", adapter.texts()[-1])
    assert match, adapter.texts()
    log = FailureLog(redis, keys=keys)
    await wait_until(lambda: log.find(match.group(1)))
    (found,) = await log.find(match.group(1))
    assert (found.platform, found.chat_id, found.category) == ("slack", "D9", "agent")
    assert found.thread_id and found.error
