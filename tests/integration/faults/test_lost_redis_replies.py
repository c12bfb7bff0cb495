"""A Redis reply lost on the wire at every step of a turn: nothing lost, nothing answered twice.

Between the service and Redis sits a loopback proxy that swallows the n-th reply after arming and
cuts that connection, so the command ran on the server but the client saw a connection error and
redis-py sent it again. Every script of ours must be idempotent for that resend: the inbox append
(a second entry is caught by dedupe), the dedupe claim, the thread submit and finish, the inbox
finish, the checkpoint write. A reply lost on the blocking inbox read leaves the entry pending,
and the reclaim finishes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from channels.manager import Manager
from channels.message import InboundMessage, Platform
from service.app import build_core
from service.settings import Settings
from storage import connect
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.recording_adapter import RecordingAdapter
from tests.fakes.tcp_proxy import TcpProxy
from tests.support import wait_until

pytestmark = pytest.mark.timeout(300)


def dm(text: str, n: int, chat: str = "D1") -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=chat,
        sender_id="U1",
        sender_name="alice",
        text=text,
        provider_message_id=f"lost-{n}",
        is_dm=True,
    )


@pytest.fixture
async def proxied(
    redis_url: str, prefix: str, tmp_path: Path
) -> AsyncIterator[tuple[TcpProxy, Manager, RecordingAdapter]]:
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    client = connect(proxy.url)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=prefix,
        data_dir=tmp_path,
        lock_ttl_s=1.0,
        rate_limit_per_minute=100_000,
    )
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter()
            core.manager.register(adapter)
            yield proxy, core.manager, adapter
    finally:
        await client.aclose()
        await proxy.stop()


async def test_a_reply_lost_at_any_step_of_a_turn_loses_and_duplicates_nothing(
    proxied: tuple[TcpProxy, Manager, RecordingAdapter],
) -> None:
    proxy, manager, adapter = proxied
    await manager.deliver(dm("echo warm-up", 0))  # opens the pool's connections
    await manager.idle()
    proxy.count_replies()
    await manager.deliver(dm("echo measure", -1))
    await manager.idle()
    steps = proxy.replies  # Redis replies one warm turn takes
    assert steps >= 6, steps
    tokens = []
    for n in range(1, steps + 1):
        token = f"tok{n}x"
        tokens.append(token)
        proxy.drop_reply(n)
        await manager.deliver(dm(f"echo {token}", n))
        await wait_until(lambda: proxy.armed == 0)  # the n-th reply from the append on is lost
        await manager.idle(timeout=60)
    assert proxy.dropped == steps
    texts = adapter.texts()
    seen = Counter(token for text in texts for token in tokens if token in text)
    assert {t: seen[t] for t in tokens} == dict.fromkeys(tokens, 1), texts
    assert not [t for t in texts if t.startswith("Sorry")], texts


async def test_a_reply_lost_on_a_new_conversation_still_gives_one_thread(
    proxied: tuple[TcpProxy, Manager, RecordingAdapter],
) -> None:
    proxy, manager, adapter = proxied
    for n in range(1, 12):
        proxy.drop_reply(n)
        await manager.deliver(dm(f"echo first {n}", 100 + n, chat=f"N{n}"))
        await manager.idle(timeout=60)
        proxy.count_replies()
        await manager.deliver(dm("recall", 200 + n, chat=f"N{n}"))
        await manager.idle(timeout=60)
        assert adapter.texts()[-1] == f"You first said: echo first {n}"
    assert len(adapter.texts()) == 22


async def test_a_reply_lost_around_a_steered_message_loses_and_duplicates_nothing(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    # A correction sent while the agent waits on its first model call is absorbed before the
    # second: drop the n-th Redis reply from its delivery on (its intake, the absorb, the finish
    # that answers it with the batch). Each correction must be answered exactly once.
    model = FakeOpenAI(delay=0.5)
    await model.start()
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    client = connect(proxy.url)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=prefix,
        data_dir=tmp_path,
        lock_ttl_s=1.0,
        rate_limit_per_minute=100_000,
        model="openai:gpt-4o-mini",
        openai_base_url=model.base_url,
        openai_api_key=API_KEY,
        streaming="off",
        busy="steer",
    )
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter()
            core.manager.register(adapter)
            for n in range(1, 13):
                chat, asked = f"S{n}", len(model.requests)
                await core.manager.deliver(dm("what time is it", 300 + n, chat=chat))
                await wait_until(lambda: len(model.requests) > asked)  # noqa: B023
                proxy.drop_reply(n)
                await core.manager.deliver(dm(f"correction c{n}x", 400 + n, chat=chat))
                await wait_until(lambda: proxy.armed == 0, timeout=30)
                await core.manager.idle(timeout=60)
            texts = adapter.texts()
    finally:
        await client.aclose()
        await proxy.stop()
        await model.stop()
    assert not [t for t in texts if t.startswith("Sorry")], texts
    assert len(texts) < 24, texts  # most corrections were steered into the run's answer
    for n in range(1, 13):
        assert sum(f"c{n}x" in t for t in texts) == 1, (n, texts)
