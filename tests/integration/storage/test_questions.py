"""Pending questions against a real server: one answer wins, ids must match, expiry is honoured."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis

from storage import Keys, PendingQuestion, PendingQuestions
from tests.integration.storage.racing import warm_pool
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


async def test_twenty_concurrent_consumers_get_the_question_exactly_once(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question()
    await questions.put("t1", asked)
    await warm_pool(redis, 20)
    # Button presses carry the id, typed answers do not; they race each other.
    taken = await asyncio.gather(
        *(questions.consume("t1", asked.question_id if i % 2 else "") for i in range(20))
    )
    assert [q for q in taken if q is not None] == [asked]
    assert await questions.get("t1") is None


async def test_consume_with_a_wrong_question_id_returns_none_and_keeps_the_question(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question()
    await questions.put("t1", asked)
    assert await questions.consume("t1", "some-older-question") is None
    assert await questions.get("t1") == asked
    assert await questions.consume("t1", asked.question_id) == asked


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
    updated = await questions.consume("t1", asked.question_id)
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
    await questions.put("t1", _question(expires_at=time.time() + 0.4))
    assert 0 < await redis.pttl(keys.question("t1")) <= 400
    assert await questions.get("t1") is not None

    async def gone() -> bool:
        return await redis.exists(keys.question("t1")) == 0

    await wait_until(gone, timeout=5.0)
    assert await questions.consume("t1") is None


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
    assert await questions.consume("t1") is None


async def test_a_corrupt_document_reads_as_no_question(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    await redis.set(keys.question("t1"), b"{not json", ex=60)
    assert await questions.get("t1") is None
    assert await questions.consume("t1", "some-id") is None
    await questions.set_message("t1", _question(), "m-1")
    assert await questions.consume("t1") is None
    assert await redis.exists(keys.question("t1")) == 0


async def test_restore_puts_a_consumed_question_back(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = _question()
    await questions.put("t1", asked)
    taken = await questions.consume("t1", asked.question_id)
    assert taken is not None
    await questions.restore("t1", taken)
    assert await questions.consume("t1", asked.question_id) == asked
