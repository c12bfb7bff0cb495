"""Redis going away and coming back: users get a short error with a reference, nothing crashes,
and the conversation continues from the persisted (AOF) state once Redis is back."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from channels.message import InboundMessage, Platform
from service.app import build_core
from service.settings import Settings
from storage import EmbeddedValkey, connect
from tests.fakes.recording_adapter import RecordingAdapter


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


async def test_redis_restart_mid_conversation_loses_nothing_and_shows_a_reference(
    tmp_path: Path,
) -> None:
    port = _free_port()
    server = EmbeddedValkey(tmp_path / "valkey", port=port)
    await server.start()
    client = connect(f"redis://127.0.0.1:{port}/0")
    settings = Settings(_env_file=None, access="open", data_dir=tmp_path)  # type: ignore[call-arg]
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter()
            core.manager.register(adapter)
            await core.manager.handle(dm("remember the harbour", 1))
            assert adapter.texts() == ["You said: remember the harbour"]

            await server.stop()
            await core.manager.handle(dm("are you there", 2))
            assert re.fullmatch(
                r"Sorry — I couldn't reach my storage just now\. \(ref [0-9a-f]{8}\)",
                adapter.texts()[-1],
            )

            await server.start()
            await core.manager.handle(dm("recall", 3))
            assert adapter.texts()[-1] == "You first said: remember the harbour"
    finally:
        await client.aclose()
        await server.stop()
