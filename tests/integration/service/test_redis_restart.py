"""Redis going away and coming back: users get a short error with a reference, nothing crashes,
and the conversation continues from the persisted (AOF) state once Redis is back."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels.message import InboundMessage, Platform
from service.app import build_core
from service.settings import Settings
from storage import EmbeddedValkey, connect
from switchboard.errors import StorageError
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import free_port


def dm(text: str, n: int) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="D1",
        sender_id="U1",
        sender_name="alice",
        text=text,
        provider_message_id=f"restart-{n}",
        is_dm=True,
    )


async def test_while_redis_is_down_messages_are_refused_and_after_a_restart_nothing_is_lost(
    tmp_path: Path,
) -> None:
    port = free_port()
    server = EmbeddedValkey(tmp_path / "valkey", port=port)
    await server.start()
    client = connect(server.url)  # its password: the store refuses clients without it
    settings = Settings(_env_file=None, access="open", data_dir=tmp_path)  # type: ignore[call-arg]
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter()
            core.manager.register(adapter)
            await core.manager.deliver(dm("remember the harbour", 1))
            await core.manager.idle()
            assert adapter.texts() == ["You said: remember the harbour"]

            await server.stop()
            # Not durable, so not taken: the adapter does not acknowledge and the platform
            # redelivers later. Nobody is told anything half-true in between.
            with pytest.raises(StorageError):
                await core.manager.deliver(dm("are you there", 2))
            assert adapter.texts() == ["You said: remember the harbour"]

            await server.start()  # same data dir: the AOF brings the conversation back
            await core.manager.deliver(dm("are you there", 2))  # the platform's redelivery
            await core.manager.deliver(dm("recall", 3))
            await core.manager.idle(timeout=60)
            assert adapter.texts() == [
                "You said: remember the harbour",
                "You said: are you there",
                "You first said: remember the harbour",
            ]
    finally:
        await client.aclose()
        await server.stop()
