"""Votes on answers against a real server: one per user per answer, changeable, bounded, listed
newest first; reaction votes find their answer through the bot message's record."""

from __future__ import annotations

import redis.asyncio as aioredis

from storage import FeedbackStore, Keys, VoteChange
from switchboard.feedback import AnswerRef, VoteRecord, VoteValue

__all__: list[str] = []


def _vote(user: str, value: VoteValue, at: float, run: str = "run-1") -> VoteRecord:
    return VoteRecord("slack", user, run, value, at, thread_id="t1", chat_id="C1", message_id="1.0")


async def test_a_users_second_vote_on_an_answer_replaces_the_first(
    redis: aioredis.Redis, keys: Keys
) -> None:
    store = FeedbackStore(redis, keys=keys)
    assert await store.record(_vote("U1", VoteValue.UP, 1000.0)) == VoteChange.NEW
    assert await store.record(_vote("U1", VoteValue.UP, 1001.0)) == VoteChange.SAME
    assert await store.record(_vote("U1", VoteValue.DOWN, 1002.0)) == VoteChange.CHANGED
    votes = await store.recent()
    assert [(v.user_id, v.value, v.at) for v in votes] == [("U1", VoteValue.DOWN, 1002.0)]
    assert votes[0].thread_id == "t1" and votes[0].run_id == "run-1"


async def test_recent_lists_votes_since_a_time_newest_first(
    redis: aioredis.Redis, keys: Keys
) -> None:
    store = FeedbackStore(redis, keys=keys)
    for i, user in enumerate(["U1", "U2", "U3"]):
        await store.record(_vote(user, VoteValue.UP, 1000.0 + i))
    assert [v.user_id for v in await store.recent()] == ["U3", "U2", "U1"]
    assert [v.user_id for v in await store.recent(since=1001.0)] == ["U3", "U2"]
    assert [v.user_id for v in await store.recent(limit=1)] == ["U3"]


async def test_votes_past_the_count_bound_or_the_age_bound_are_dropped_on_write(
    redis: aioredis.Redis, keys: Keys
) -> None:
    store = FeedbackStore(redis, keys=keys, keep_s=100, max_votes=3)
    for i in range(5):
        await store.record(_vote(f"U{i}", VoteValue.UP, 1000.0 + i))
    assert [v.user_id for v in await store.recent()] == ["U4", "U3", "U2"]
    assert await redis.hlen(keys.feedback("votes")) == 3
    await store.record(_vote("U9", VoteValue.DOWN, 1103.5))  # U2 and U3 are over 100 s old
    assert [v.user_id for v in await store.recent()] == ["U9", "U4"]
    assert await redis.hlen(keys.feedback("votes")) == 2


async def test_a_withdrawn_vote_is_no_longer_listed(redis: aioredis.Redis, keys: Keys) -> None:
    store = FeedbackStore(redis, keys=keys)
    await store.record(_vote("U1", VoteValue.UP, 1000.0))
    assert await store.withdraw("slack", "run-1", "U1")
    assert not await store.withdraw("slack", "run-1", "U1")
    assert await store.recent() == []


async def test_a_bot_message_remembers_its_run_and_asker_until_its_ttl(
    redis: aioredis.Redis, keys: Keys
) -> None:
    store = FeedbackStore(redis, keys=keys, answer_ttl_s=600)
    ref = AnswerRef(thread_id="t1", run_id="run-1", asker_id="42")
    await store.remember_answer("telegram", "42", ["7", "8"], ref)
    assert await store.answer_for("telegram", "42", "8") == ref
    assert await store.answer_for("telegram", "42", "9") is None
    assert 0 < await redis.ttl(keys.answer("telegram", "42", "7")) <= 600
