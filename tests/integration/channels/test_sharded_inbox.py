"""The manager on a sharded inbox (SWITCHBOARD_INBOX_SHARDS=4), end to end: messages of many
chats land in several shards and every one is answered once by the worker's shard readers."""

from __future__ import annotations

from channels.message import InboundMessage, Platform
from storage import Keys
from storage.shards import Layout
from tests.support import wait_until

__all__: list[str] = []


def _dm(chat: str, text: str) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=chat,
        sender_id=f"U{chat}",
        sender_name="alice",
        text=text,
        provider_message_id=f"{chat}-1",
        is_dm=True,
    )


async def test_every_chat_is_answered_once_from_a_sharded_inbox(
    make_manager, redis, keys: Keys
) -> None:  # type: ignore[no-untyped-def]
    from tests.fakes.recording_adapter import RecordingAdapter

    manager = await make_manager(inbox_shards=4)
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    chats = [f"D{n}" for n in range(24)]
    layout = Layout(4)
    assert len({layout.tag_for(f"slack:{chat}") for chat in chats}) == 4

    for chat in chats:
        await manager.deliver(_dm(chat, f"hello from {chat}"))
    await manager.idle()

    by_chat = {s.target.chat_id: s.text for s in adapter.sent}
    assert len(adapter.sent) == len(chats)
    assert by_chat == {chat: f"You said: hello from {chat}" for chat in chats}
    assert await redis.exists(keys.inbox()) == 0  # the single stream is not used
    for tag in layout.tags:
        assert await redis.xlen(keys.inbox(tag)) == 0  # every shard drained and finished


async def test_messages_left_in_the_old_layout_are_answered_after_the_shard_count_grew(
    make_manager, redis, keys: Keys
) -> None:  # type: ignore[no-untyped-def]
    from tests.fakes.recording_adapter import RecordingAdapter

    old_ingress = await make_manager(role="ingress", lock_ttl_s=1.0)  # one shard: sb:inbox
    chats = [f"D{n}" for n in range(6)]
    for chat in chats:
        await old_ingress.deliver(_dm(chat, f"left in {chat}"))
    assert await redis.xlen(keys.inbox()) == len(chats)

    worker = await make_manager(inbox_shards=4, lock_ttl_s=1.0)  # reads its shards, drains sb:inbox
    adapter = RecordingAdapter(deliver=worker.deliver)
    worker.register(adapter)
    await wait_until(lambda: len(adapter.sent) >= len(chats), timeout=30)
    await worker.idle()
    assert sorted(s.text for s in adapter.sent) == sorted(f"You said: left in {c}" for c in chats)
    assert await redis.xlen(keys.inbox()) == 0


async def test_a_quiet_shards_message_is_read_while_a_busy_shard_holds_a_backlog(
    make_manager, keys: Keys
) -> None:  # type: ignore[no-untyped-def]
    from tests.fakes.recording_adapter import RecordingAdapter

    manager = await make_manager(inbox_shards=4, max_concurrent_turns=6)
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    layout = Layout(4)
    busy_tag = layout.tag_for("slack:B0")
    busy = [c for c in (f"B{n}" for n in range(400)) if layout.tag_for(f"slack:{c}") == busy_tag]
    quiet = next(
        c for c in (f"Q{n}" for n in range(400)) if layout.tag_for(f"slack:{c}") != busy_tag
    )
    busy = busy[:8]

    for chat in busy:  # 8 three-second turns in one shard: more than a worker of 6 slots runs
        await manager.deliver(_dm(chat, "slow 3"))
    await manager.deliver(_dm(quiet, "hello from the quiet shard"))

    await wait_until(lambda: any(s.target.chat_id == quiet for s in adapter.sent), timeout=30)
    answered_busy = sum(1 for s in adapter.sent if s.target.chat_id in busy)
    assert answered_busy == 0  # one stream would read it only once busy turns had ended
    await manager.idle(timeout=60)
    assert sum(1 for s in adapter.sent if s.target.chat_id in busy) == len(busy)
