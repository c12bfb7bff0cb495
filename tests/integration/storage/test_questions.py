"""Pending questions against a real server: ids must match, expiry is honoured, and a question id
finds its thread while the question lives."""

from __future__ import annotations

import time

import redis.asyncio as aioredis

from storage import Keys, PendingQuestion, PendingQuestions
from tests.support import wait_until

__all__: list[str] = []


def _question(**overrides: object) -> PendingQuestion:
    fields: dict[str, object] = {
        "asker_id": "u1",
        "text": "Which one do you mean? «ünïcode» ✓",
        "options": ("alpha", "beta", "gamma"),
    }
    fields.update(overrides)
    return PendingQuestion(**fields)  # type: ignore[arg-type]


async def test_put_then_get_returns_the_same_question(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question(message_id="m-1")
    await questions.put("t1", asked)
    assert await questions.get("t1") == asked
    assert await questions.get("t2") is None


async def test_put_replaces_the_older_question(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    await questions.put("t1", _question())
    newer = _question(text="Second question", options=())
    await questions.put("t1", newer)
    assert await questions.get("t1") == newer


async def test_set_message_updates_only_the_matching_question_and_keeps_the_ttl(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question(expires_at=time.time() + 100)
    await questions.put("t1", asked)
    ttl_before = await redis.pttl(keys.question("t1"))

    await questions.set_message("t1", _question(), "wrong-message")  # another question's id
    assert await questions.get("t1") == asked

    await questions.set_message("t1", asked, "msg-77")
    updated = await questions.get("t1")
    assert updated is not None
    assert updated.message_id == "msg-77"
    assert (updated.question_id, updated.text, updated.options, updated.asker_id) == (
        asked.question_id,
        asked.text,
        asked.options,
        asked.asker_id,
    )
    assert abs(updated.expires_at - asked.expires_at) < 0.01
    assert 0 < await redis.pttl(keys.question("t1")) <= ttl_before


async def test_set_message_keeps_a_question_without_options_readable(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question(options=())
    await questions.put("t1", asked)
    await questions.set_message("t1", asked, "msg-1")
    updated = await questions.get("t1")
    assert updated is not None
    assert (updated.options, updated.message_id) == ((), "msg-1")


async def test_set_message_on_a_missing_question_creates_nothing(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    await questions.set_message("t1", _question(), "msg-1")
    assert await redis.exists(keys.question("t1")) == 0


async def test_the_key_expires_at_the_questions_expires_at(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    await questions.put("t1", _question(expires_at=time.time() + 1.5))
    assert 0 < await redis.pttl(keys.question("t1")) <= 1500
    assert await questions.get("t1") is not None  # 1.5 s: room for a busy machine

    async def gone() -> bool:
        return await redis.exists(keys.question("t1")) == 0

    await wait_until(gone, timeout=5.0)
    assert await questions.get("t1") is None


async def test_the_default_expiry_is_a_week(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    await questions.put("t1", _question())
    assert 7 * 24 * 3600 - 60 <= await redis.ttl(keys.question("t1")) <= 7 * 24 * 3600


async def test_an_already_expired_question_is_not_stored_and_replaces_the_old_one(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    await questions.put("t1", _question())
    await questions.put("t1", _question(expires_at=time.time() - 1))
    assert await redis.exists(keys.question("t1")) == 0
    assert await questions.get("t1") is None


async def test_a_question_past_its_expires_at_is_never_returned(
    redis: aioredis.Redis, keys: Keys
) -> None:
    # E.g. stored by a worker whose clock ran behind: the document's own expiry still counts.
    questions = PendingQuestions(redis, keys=keys)
    await redis.set(keys.question("t1"), _question(expires_at=time.time() - 5).to_json(), ex=60)
    assert await questions.get("t1") is None


async def test_a_corrupt_document_reads_as_no_question(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    await redis.set(keys.question("t1"), b"{not json", ex=60)
    assert await questions.get("t1") is None
    await questions.set_message("t1", _question(), "m-1")  # leaves the unreadable document alone
    assert await redis.get(keys.question("t1")) == b"{not json"
    assert await questions.get("t1") is None


async def test_thread_of_finds_the_thread_a_question_id_was_asked_in(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    first, second = _question(), _question(text="Another")
    await questions.put("t1", first)
    await questions.put("t2", second)
    assert await questions.thread_of(first.question_id) == "t1"
    assert await questions.thread_of(second.question_id) == "t2"
    assert await questions.thread_of("never-asked") is None


async def test_the_id_index_lives_exactly_as_long_as_the_question(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question(expires_at=time.time() + 100)
    await questions.put("t1", asked)
    index_ttl = await redis.pttl(keys.question_thread(asked.question_id))
    question_ttl = await redis.pttl(keys.question("t1"))
    assert 99_000 < index_ttl <= 100_000
    assert abs(index_ttl - question_ttl) < 50


async def test_the_id_index_expires_with_the_question(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question(expires_at=time.time() + 1.5)  # room for a busy machine before the read
    await questions.put("t1", asked)
    assert await questions.thread_of(asked.question_id) == "t1"

    async def gone() -> bool:
        return await questions.thread_of(asked.question_id) is None

    await wait_until(gone, timeout=5.0)


async def test_an_already_expired_question_is_not_indexed(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    expired = _question(expires_at=time.time() - 1)
    await questions.put("t1", expired)
    assert await questions.thread_of(expired.question_id) is None
    assert await redis.exists(keys.question_thread(expired.question_id)) == 0
