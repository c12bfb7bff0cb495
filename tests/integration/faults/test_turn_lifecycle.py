"""The turn side under real faults: one answer per message and one model call per batch.

Real `switchboard serve` processes (or the production wiring in-process) on real Redis, the fake
Bot API and the fake OpenAI server (so model calls are counted on the wire):
- a reply whose send is held past the lock TTL while a follow-up queues;
- a notice the platform refuses mid-turn;
- Redis unreachable for longer than the old 7.5 s finish window while a reply is sent;
- a worker `kill -9`'d after the first of three chunks of a long reply;
- a batch that fails on every attempt (its answer can never be recorded).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from channels.message import InboundMessage, Platform
from service.app import build_core
from service.settings import Settings
from storage import connect
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.recording_adapter import RecordingAdapter
from tests.fakes.tcp_proxy import TcpProxy
from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.processes import Worker
from tests.integration.faults.telegram_service import post_until_taken
from tests.support import wait_until

pytestmark = pytest.mark.timeout(240)

ANN = FakeTelegram.user(7, "Ann")
_CLUSTER = os.environ.get("SWITCHBOARD_REDIS_CLUSTER", "").strip().lower() == "true"


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    server = FakeOpenAI()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _model_env(model: FakeOpenAI, **extra: str) -> dict[str, str]:
    return {
        "SWITCHBOARD_MODEL": "openai:gpt-4o-mini",
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": API_KEY,
        "SWITCHBOARD_STREAMING": "off",
        **extra,
    }


def _asked(model: FakeOpenAI, word: str) -> int:
    """Model calls whose last user message contains `word`."""
    count = 0
    for request in model.requests:
        users = [m for m in request.messages if m.get("role") == "user"]
        if users and word in str(users[-1].get("content")):
            count += 1
    return count


async def test_a_reply_held_past_the_lock_ttl_is_sent_once_and_the_model_called_once_per_batch(
    fake: FakeTelegram, model: FakeOpenAI, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    worker = Worker(fake, redis_url, prefix, tmp_path / "w", env=_model_env(model))  # lock 2 s
    chat = fake.dm(ANN)
    fake.hold_next("sendMessage", 7.0)  # the first reply waits 3.5 lock TTLs for the platform
    try:
        await worker.start()
        async with worker.http() as http:
            await post_until_taken(http, fake.say(chat, ANN, "first-tok", push=False))
            await wait_until(lambda: fake.held, timeout=30)
            await post_until_taken(http, fake.say(chat, ANN, "second-tok", push=False))
            await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 2, timeout=60)
            await asyncio.sleep(4)  # two lock TTLs: time for a duplicate to show up
    finally:
        await worker.stop()
    assert fake.bot_texts(ANN["id"]) == ["You said: first-tok", "You said: second-tok"]
    assert (_asked(model, "first-tok"), _asked(model, "second-tok")) == (1, 1)


async def test_a_notice_the_platform_refuses_mid_turn_does_not_strand_the_thread(
    fake: FakeTelegram, model: FakeOpenAI, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    env = _model_env(model, SWITCHBOARD_MAX_ATTACHMENT_MB="0.001", SWITCHBOARD_LOCK_TTL_S="30")
    worker = Worker(fake, redis_url, prefix, tmp_path / "w", env=env)
    chat = fake.dm(ANN)
    big = ("notes.txt", b"x" * 5000, "text/plain")  # over the 1 kB limit: a notice names it
    fake.fail_next("sendMessage", status=403, description="Forbidden: notice refused")
    try:
        await worker.start()
        async with worker.http() as http:
            await post_until_taken(http, fake.say(chat, ANN, caption="read-tok", document=big))
            await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=30)
            # the lock is 30 s: a stranded thread would leave this message waiting that long
            await post_until_taken(http, fake.say(chat, ANN, "next-tok", push=False))
            await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 2, timeout=10)
    finally:
        await worker.stop()
    texts = fake.bot_texts(ANN["id"])
    assert texts[0].startswith("You said:") and "read-tok" in texts[0], texts
    assert texts[1:] == ["You said: next-tok"]


@pytest.mark.skipif(_CLUSTER, reason="the proxy stands in front of one node")
@pytest.mark.parametrize(
    ("lock_ttl", "outage_s"),
    [
        ("30", 12.0),  # longer than the old 7.5 s finish window
        ("2", 5.0),  # the lock expires meanwhile: the batch is still recorded answered
    ],
)
async def test_redis_unreachable_mid_reply_gives_one_answer(
    fake: FakeTelegram,
    model: FakeOpenAI,
    redis_url: str,
    prefix: str,
    tmp_path: Path,
    lock_ttl: str,
    outage_s: float,
) -> None:
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    env = _model_env(model, SWITCHBOARD_LOCK_TTL_S=lock_ttl)
    worker = Worker(fake, proxy.url, prefix, tmp_path / "w", env=env)
    chat = fake.dm(ANN)
    try:
        await worker.start()
        fake.hold_next("sendMessage", 1.0)
        async with worker.http() as http:
            await post_until_taken(http, fake.say(chat, ANN, "outage-tok", push=False))
        await wait_until(lambda: fake.held, timeout=30)
        proxy.go_down()  # the reply goes out while Redis is unreachable
        await asyncio.sleep(outage_s)
        proxy.come_up()
        await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=60)
        # the batch is recorded answered (with the lock lost meanwhile too) before anything else
        # comes: a message that took the thread first would find it unrecorded and resend it
        await wait_until(lambda: _all_answered(redis_url, prefix), timeout=60)
        async with worker.http() as http:
            await post_until_taken(http, fake.say(chat, ANN, "after-tok", push=False))
        await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 2, timeout=60)
        await asyncio.sleep(3)
    finally:
        await worker.stop()
        await proxy.stop()
    assert fake.bot_texts(ANN["id"]) == ["You said: outage-tok", "You said: after-tok"]
    assert _asked(model, "outage-tok") == 1


async def test_a_worker_killed_after_the_first_of_three_chunks_leaves_only_the_rest_to_send(
    fake: FakeTelegram, model: FakeOpenAI, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    env = _model_env(model)
    first = Worker(fake, redis_url, prefix, tmp_path / "a", env=env)
    second = Worker(fake, redis_url, prefix, tmp_path / "b", env=env)
    chat = fake.dm(ANN)
    long_text = " ".join(f"w{i:04d}" for i in range(1700))  # "You said: …" is three messages
    fake.hold_next("sendMessage", 60.0, after=1)  # the second chunk waits; the worker dies
    try:
        await first.start()
        async with first.http() as http:
            await post_until_taken(http, fake.say(chat, ANN, long_text, push=False))
        await wait_until(lambda: fake.held, timeout=30)
        assert len(fake.bot_texts(ANN["id"])) == 1
        await first.kill()
        await second.start()
        await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 3, timeout=60)
        await asyncio.sleep(3)
    finally:
        await first.stop()
        await second.stop()
    texts = fake.bot_texts(ANN["id"])
    assert len(texts) == 3, [t[:40] for t in texts]
    joined = " ".join(texts)
    assert joined.startswith("You said: w0000") and joined.rstrip().endswith("w1699")
    assert [w for w in joined.split() if w.startswith("w")] == [f"w{i:04d}" for i in range(1700)]
    assert len(model.requests) == 1  # the survivor resent from the ledger


async def test_a_worker_killed_while_a_steered_message_is_pending_answers_it_once(
    fake: FakeTelegram, model: FakeOpenAI, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    # The correction joins the run before its second model call; the worker dies during that
    # call. Nothing of the run was recorded, so the survivor answers both messages, once.
    model.delay = 1.5
    env = _model_env(model, SWITCHBOARD_BUSY="steer")
    first = Worker(fake, redis_url, prefix, tmp_path / "a", env=env)
    second = Worker(fake, redis_url, prefix, tmp_path / "b", env=env)
    chat = fake.dm(ANN)
    try:
        await first.start()
        async with first.http() as http:
            await post_until_taken(http, fake.say(chat, ANN, "what time is it", push=False))
            await wait_until(lambda: len(model.requests) == 1, timeout=30)
            await post_until_taken(http, fake.say(chat, ANN, "berlin-tok please", push=False))
        await wait_until(lambda: len(model.requests) == 2, timeout=30)
        assert any("berlin-tok" in str(m.get("content")) for m in model.requests[1].messages)
        await first.kill()  # the steered message is taken in, its answer not yet written
        assert fake.bot_texts(ANN["id"]) == []
        await second.start()
        await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 1, timeout=60)
        await wait_until(lambda: _all_answered(redis_url, prefix), timeout=30)
        await asyncio.sleep(3)  # time for a duplicate to show up
    finally:
        await first.stop()
        await second.stop()
    texts = fake.bot_texts(ANN["id"])
    assert len(texts) == 1, texts
    last_users = [
        [str(m.get("content")) for m in r.messages if m.get("role") == "user"]
        for r in model.requests[2:]
    ]
    # the survivor's run had both messages, in order, as one batch
    assert any(u and u[-1] == "what time is it\n\nberlin-tok please" for u in last_users), (
        last_users
    )


async def _all_answered(redis_url: str, prefix: str) -> bool:
    """No unfinished inbox entry and no thread with a queued message."""
    client = connect(redis_url, cluster=_CLUSTER)
    try:
        if await client.xlen(f"{prefix}inbox"):
            return False
        return not [key async for key in client.scan_iter(match=f"{prefix}{{*}}:q")]
    finally:
        await client.aclose()


def _dm(text: str, n: int) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="D1",
        sender_id="U1",
        sender_name="alice",
        text=text,
        provider_message_id=f"fail-{n}",
        is_dm=True,
    )


@pytest.mark.skipif(_CLUSTER, reason="the proxy stands in front of one node")
async def test_a_batch_failing_on_every_attempt_calls_the_model_max_attempts_times_then_says_so(
    model: FakeOpenAI, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    client = connect(proxy.url)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="open",
        redis_prefix=prefix,
        data_dir=tmp_path,
        lock_ttl_s=0.5,
        max_attempts=3,
        rate_limit_per_minute=100_000,
        model="openai:gpt-4o-mini",
        openai_base_url=model.base_url,
        openai_api_key=API_KEY,
        streaming="off",
    )
    try:
        async with build_core(settings, client) as core:
            adapter = RecordingAdapter()
            core.manager.register(adapter)
            # every attempt's answer is lost on its way to the ledger: the connection that
            # carries it is cut, so no attempt can ever send
            proxy.cut_requests(b'"entries":')
            await core.manager.deliver(_dm("doomed-tok", 1))
            await wait_until(lambda: adapter.texts(), timeout=120)
            await asyncio.sleep(3)  # no further attempt after the error reply
            proxy.cut_requests(b"")
    finally:
        await client.aclose()
        await proxy.stop()
    assert _asked(model, "doomed-tok") == 3
    texts = adapter.texts()
    assert len(texts) == 1 and texts[0].startswith("Sorry") and "(ref " in texts[0], texts
