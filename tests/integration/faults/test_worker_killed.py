"""A worker killed with SIGKILL in the middle of a turn, while another worker runs its own:
the dead worker's message and the one queued behind it are answered by the survivor, once each.

Two real `switchboard serve` processes share one Redis and the fake Bot API (webhook mode, so
nothing polls twice). The first takes a slow message; a second message for the same chat queues
behind it (⏳); the first process is killed; its inbox entry is reclaimed and the thread's queue,
whose lock expires with the dead process, is swept, all without any new message arriving.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.processes import Worker
from tests.integration.faults.telegram_service import post_until_taken
from tests.support import wait_until

pytestmark = pytest.mark.timeout(180)

ANN = FakeTelegram.user(7, "Ann")
BOB = FakeTelegram.user(8, "Bob")


async def test_a_worker_killed_mid_turn_leaves_every_message_answered_exactly_once(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    first = Worker(fake, redis_url, prefix, tmp_path / "a")
    second = Worker(fake, redis_url, prefix, tmp_path / "b")
    ann_chat, bob_chat = fake.dm(ANN), fake.dm(BOB)
    try:
        await first.start()
        async with first.http() as http:
            await post_until_taken(http, fake.say(ann_chat, ANN, "slow 30", push=False))
        # typing shows after 0.3 s: the first worker is inside the turn
        await wait_until(lambda: fake.calls_to("sendChatAction"), timeout=30)
        await second.start()
        queued = fake.say(ann_chat, ANN, "echo queued-tok", push=False)
        async with second.http() as http:
            await post_until_taken(http, queued)
            await wait_until(lambda: fake.calls_to("setMessageReaction"), timeout=30)
            await post_until_taken(http, fake.say(bob_chat, BOB, "slow 1", push=False))
        await first.kill()

        def ann_texts() -> list[str]:
            return fake.bot_texts(ANN["id"])

        await wait_until(lambda: "queued-tok" in " ".join(ann_texts()), timeout=60)
        await wait_until(lambda: fake.bot_texts(BOB["id"]), timeout=60)
        await asyncio.sleep(3)  # time for any duplicate to show up
    finally:
        await first.stop()
        await second.stop()
    texts = ann_texts()
    assert texts in (
        ["You said: slow 30\n\necho queued-tok"],  # both answered in one turn by the survivor
        ["Done after 30 s.", "queued-tok"],
    ), texts
    assert fake.bot_texts(BOB["id"]) == ["Done after 1 s."]


async def test_a_worker_killed_sending_chunk_two_leaves_chunk_one_sent_once(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    """A long streamed reply in a DM is settled as three messages (a Telegram draft shows none):
    chunk 1 is accepted, the worker is killed inside chunk 2's sendMessage, and the survivor
    finishes the reply from the ledger: chunk 1's receipt was durable before chunk 2 went out,
    so only chunk 2 (whose receipt died with the worker) may be sent twice."""
    first = Worker(fake, redis_url, prefix, tmp_path / "a")
    second = Worker(fake, redis_url, prefix, tmp_path / "b")
    chat = fake.dm(ANN)
    fake.hold_next("sendMessage", 120, after=1)  # chunk 2 hangs until its caller dies
    try:
        await first.start()
        async with first.http() as http:
            await post_until_taken(http, fake.say(chat, ANN, "long 9000", push=False))
        await wait_until(lambda: "sendMessage" in fake.held, timeout=60)
        assert len(fake.calls_to("sendMessage", ok_only=True)) == 1  # chunk 1, accepted
        # The survivor starts once the first worker holds the turn: started earlier, it could
        # take the message itself and be the one left hanging in chunk 2.
        await second.start()
        await first.kill()
        await wait_until(lambda: len(fake.calls_to("sendMessage", ok_only=True)) >= 3, timeout=90)
        await asyncio.sleep(3)  # time for any duplicate to show up
    finally:
        await first.stop()
        await second.stop()
    texts = [c["text"] for c in fake.calls_to("sendMessage", ok_only=True)]
    chunks = list(dict.fromkeys(texts))
    assert len(chunks) == 3, texts
    assert texts.count(chunks[0]) == 1
    assert texts.count(chunks[1]) <= 2
    assert texts.count(chunks[2]) == 1
    assert "".join(fake.bot_texts(ANN["id"])) == "".join(chunks)
