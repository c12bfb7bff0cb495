"""A fleet on one Redis: an ingress and two workers share a burst; exactly one process polls
Telegram, and when it is killed another takes over; the fleet together keeps Telegram's send
limits.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from storage import connect
from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.processes import Worker
from tests.integration.faults.telegram_service import (
    answers_per_token,
    post_until_taken,
    users,
)
from tests.support import wait_until

pytestmark = pytest.mark.timeout(240)


def tightest_thirty_one(fake: FakeTelegram) -> float:
    """The shortest time in which 31 sends arrived: over one second means the fleet kept
    Telegram's 30 messages per second per bot (less some arrival jitter of the HTTP calls)."""
    times = sorted(c.at for c in fake.calls if c.method == "sendMessage")
    return min(times[i + 30] - times[i] for i in range(len(times) - 30))


async def test_an_ingress_and_two_workers_answer_a_burst_once_within_the_bots_send_limit(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    ingress = Worker(fake, redis_url, prefix, tmp_path / "in", role="ingress")
    workers = [Worker(fake, redis_url, prefix, tmp_path / f"w{i}", role="worker") for i in range(2)]
    people = users(90)
    tokens = [f"f{i}z" for i in range(len(people))]
    try:
        await asyncio.gather(ingress.start(), *(w.start() for w in workers))
        async with ingress.http() as http:
            await asyncio.gather(
                *(
                    post_until_taken(http, fake.say(fake.dm(u), u, f"slow 0.3 {t}", push=False))
                    for u, t in zip(people, tokens, strict=True)
                )
            )
        await wait_until(
            lambda: sum(answers_per_token(fake, tokens).values()) >= len(tokens), timeout=120
        )
        await asyncio.sleep(1)  # room for a duplicate to show
    finally:
        await asyncio.gather(ingress.stop(), *(w.stop() for w in workers))
    assert answers_per_token(fake, tokens) == dict.fromkeys(tokens, 1)
    shares = [len(w.log_events("reply.sent")) for w in workers]
    assert sum(shares) == len(tokens) and all(shares), shares  # both workers took a share
    assert ingress.log_events("reply.sent") == []  # the ingress only queues
    # 30 per second, counted by the fleet; two unshared pacers would let 31 out in ~0.05 s
    assert tightest_thirty_one(fake) > 0.5


async def test_one_process_polls_and_a_standby_takes_over_when_it_is_killed(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    first = Worker(fake, redis_url, prefix, tmp_path / "a", mode="polling")
    second = Worker(fake, redis_url, prefix, tmp_path / "b", mode="polling")
    ann, bob = FakeTelegram.user(7, "Ann"), FakeTelegram.user(8, "Bob")
    try:
        await first.start()
        await second.start()
        async with first.http() as a, second.http() as b:
            holders = [(await h.get("/readyz")).json()["leases"] for h in (a, b)]
        assert sorted(map(len, holders)) == [0, 1], holders  # exactly one owns the poll
        owner, standby = (first, second) if holders[0] else (second, first)
        fake.say(fake.dm(ann), ann, "echo before-kill")
        await wait_until(lambda: fake.bot_texts(ann["id"]), timeout=30)
        # Let the owner record the answer: a kill between the reply and that record is the
        # documented window in which a reply may be sent again (not what this test is about).
        await wait_until(lambda: _inbox_empty(redis_url, prefix), timeout=30)
        await owner.kill()
        fake.say(fake.dm(bob), bob, "echo after-kill")  # waits in Telegram for the next poller
        await wait_until(lambda: fake.bot_texts(bob["id"]), timeout=30)
        async with standby.http() as h:
            assert (await h.get("/readyz")).json()["leases"]
    finally:
        await first.stop()
        await second.stop()
    assert fake.bot_texts(ann["id"]) == ["before-kill"]
    assert fake.bot_texts(bob["id"]) == ["after-kill"]
    assert fake.most_pollers == 1  # never two getUpdates at once


async def test_readyz_names_the_role(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    worker = Worker(fake, redis_url, prefix, tmp_path / "w", role="worker")
    try:
        await worker.start()
        async with worker.http() as h:
            body = (await h.get("/readyz")).json()
            hook = await h.post("/telegram/webhook", content=b"{}")
    finally:
        await worker.stop()
    assert body == {"status": "ready", "role": "worker", "leases": []}
    assert hook.status_code == 404  # a worker takes no webhooks
    assert not fake.calls_to("setWebhook")  # nor registers them


async def _inbox_empty(redis_url: str, prefix: str) -> bool:
    client = connect(redis_url)
    try:
        return int(await client.xlen(f"{prefix}inbox")) == 0
    finally:
        await client.aclose()
