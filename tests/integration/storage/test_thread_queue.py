"""The thread queue against a real server: who runs, what queues, what is refused, what a resend
changes (nothing), and that a holder who lost its lock cannot touch the queue."""

from __future__ import annotations

import asyncio
import random
import re
import time

import redis.asyncio as aioredis

from storage import Keys, PendingQuestion, PendingQuestions, PendingWarnings, ThreadLocks
from storage.thread_queue import (
    DONE_TTL_S,
    QUEUE_CAP,
    QUEUE_TTL_S,
    Slot,
    SlotState,
    ThreadQueue,
    sortable_entry_id,
)
from switchboard.state import BusyMode
from tests.integration.storage.racing import warm_pool
from tests.support import wait_until

__all__: list[str] = []

T = "chat:7"  # a thread id with a colon, as real ones have


def _pl(entry_id: str) -> bytes:
    return f"message {entry_id}".encode()


def _ids(slot: Slot) -> list[str]:
    return [item.entry_id for item in slot.items]


async def _submit(queue: ThreadQueue, entry_id: str, token: str, **kw: BusyMode) -> Slot:
    return await queue.submit(T, entry_id, _pl(entry_id), token, **kw)


async def _queued(redis: aioredis.Redis, keys: Keys) -> list[str]:
    return [m.decode() for m in await redis.zrange(keys.thread(T, "q"), 0, -1)]


async def test_submit_to_a_free_thread_runs_with_the_queue_and_takes_the_lock(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    slot = await _submit(queue, "1-0", "tok-a")
    assert slot.state is SlotState.RUN
    assert slot.depth == 1
    assert slot.lock is not None
    assert (slot.lock.thread_id, slot.lock.token) == (T, "tok-a")
    assert _ids(slot) == [sortable_entry_id("1-0")]
    assert slot.items[0].payload == _pl("1-0")
    assert await redis.get(keys.lock(T)) == b"tok-a"


async def test_a_second_submit_while_held_is_queued_without_the_lock(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    await _submit(queue, "1-0", "tok-a")
    slot = await _submit(queue, "2-0", "tok-b")
    assert slot.state is SlotState.QUEUED
    assert (slot.depth, slot.lock, slot.items) == (2, None, [])
    assert await redis.get(keys.lock(T)) == b"tok-a"
    assert await _queued(redis, keys) == [sortable_entry_id("1-0"), sortable_entry_id("2-0")]


async def test_finish_returns_what_queued_meanwhile_as_the_next_batch_then_releases(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await _submit(queue, "2-0", "tok-b")
    await _submit(queue, "3-0", "tok-c")

    nxt = await queue.finish(first.lock, _ids(first))
    assert nxt.state is SlotState.RUN
    assert nxt.lock == first.lock  # the holder keeps the lock for the next batch
    assert _ids(nxt) == [sortable_entry_id("2-0"), sortable_entry_id("3-0")]
    assert [i.payload for i in nxt.items] == [_pl("2-0"), _pl("3-0")]
    assert await redis.get(keys.lock(T)) == b"tok-a"

    last = await queue.finish(first.lock, _ids(nxt))
    assert last.state is SlotState.RELEASED
    assert last.lock is None
    assert await redis.exists(keys.lock(T), keys.thread(T, "q"), keys.thread(T, "qmsg")) == 0
    done = await redis.zrange(keys.thread(T, "done"), 0, -1)
    assert sorted(d.decode() for d in done) == [sortable_entry_id(f"{n}-0") for n in (1, 2, 3)]


async def test_finish_of_part_of_the_queue_keeps_the_rest_queued(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    await _submit(queue, "1-0", "tok-a")
    await _submit(queue, "2-0", "tok-b")
    slot = await _submit(queue, "3-0", "tok-a")  # the holder's own next message: still RUN
    assert slot.lock is not None
    assert _ids(slot) == [sortable_entry_id(f"{n}-0") for n in (1, 2, 3)]
    nxt = await queue.finish(slot.lock, [sortable_entry_id("1-0")])
    assert _ids(nxt) == [sortable_entry_id("2-0"), sortable_entry_id("3-0")]


async def test_the_queue_is_in_entry_order_whatever_order_fifteen_racing_submits_land_in(
    redis: aioredis.Redis, keys: Keys, prefix: str
) -> None:
    # Real stream ids: many share a millisecond, so seq 10 must sort after seq 9 (padding).
    stream = f"{prefix}stream"
    entry_ids = [(await redis.xadd(stream, {"m": "x"})).decode() for _ in range(15)]
    queue = ThreadQueue(redis, keys=keys, cap=20)
    shuffled = random.Random(7).sample(entry_ids, len(entry_ids))
    await warm_pool(redis, 15)
    slots = await asyncio.gather(*(_submit(queue, e, f"tok-{e}") for e in shuffled))

    runs = [s for s in slots if s.state is SlotState.RUN]
    assert len(runs) == 1
    assert sum(s.state is SlotState.QUEUED for s in slots) == 14
    assert runs[0].lock is not None
    everything = await queue.finish(runs[0].lock, [])  # nothing answered: the whole queue
    assert _ids(everything) == [sortable_entry_id(e) for e in entry_ids]
    assert [i.payload for i in everything.items] == [_pl(e) for e in entry_ids]


async def test_entry_ids_sort_numerically_not_as_text(redis: aioredis.Redis, keys: Keys) -> None:
    queue = ThreadQueue(redis, keys=keys)
    for entry_id in ("10-0", "9-10", "100-1", "9-2", "9-0"):
        slot = await _submit(queue, entry_id, "tok-a")
    expected = ["9-0", "9-2", "9-10", "10-0", "100-1"]
    assert _ids(slot) == [sortable_entry_id(e) for e in expected]
    assert sortable_entry_id("9-10") == "000000000000009-00000010"
    assert sortable_entry_id(sortable_entry_id("9-10")) == sortable_entry_id("9-10")


async def test_the_eleventh_unanswered_message_is_full_and_nothing_is_stored(
    redis: aioredis.Redis, keys: Keys
) -> None:
    assert QUEUE_CAP == 10
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    for n in range(2, 11):
        assert (await _submit(queue, f"{n}-0", f"tok-{n}")).state is SlotState.QUEUED

    full = await _submit(queue, "11-0", "tok-11")
    assert (full.state, full.depth, full.lock) == (SlotState.FULL, 10, None)
    assert sortable_entry_id("11-0") not in await _queued(redis, keys)
    assert await redis.hexists(keys.thread(T, "qmsg"), sortable_entry_id("11-0")) is False
    assert await redis.hlen(keys.thread(T, "qmsg")) == 10

    # the running batch counts until it is answered; once it is, there is room again
    await queue.finish(first.lock, [sortable_entry_id("1-0")])
    assert (await _submit(queue, "11-0", "tok-11")).state is SlotState.QUEUED


async def test_a_busy_thread_refuses_without_queueing_when_asked_not_to_queue(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    free = await _submit(queue, "1-0", "tok-a", busy=BusyMode.REJECT)
    assert free.state is SlotState.RUN  # a free thread runs either way
    busy = await _submit(queue, "2-0", "tok-b", busy=BusyMode.REJECT)
    assert (busy.state, busy.depth, busy.lock) == (SlotState.BUSY, 1, None)
    assert await _queued(redis, keys) == [sortable_entry_id("1-0")]
    assert await redis.hexists(keys.thread(T, "qmsg"), sortable_entry_id("2-0")) is False
    assert await redis.get(keys.lock(T)) == b"tok-a"


async def test_a_resent_submit_changes_nothing(redis: aioredis.Redis, keys: Keys) -> None:
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    # the run started: a /stop and a loop warning for it must survive the resend
    assert await ThreadLocks(redis, keys=keys).request_stop(T) is True
    await PendingWarnings(redis, keys=keys).add(T, "live-run", "loop")
    again = await _submit(queue, "1-0", "tok-a")
    assert again.state is SlotState.RUN
    assert (again.depth, _ids(again)) == (1, _ids(first))

    queued = await _submit(queue, "2-0", "tok-b")
    queued_again = await _submit(queue, "2-0", "tok-b")
    assert (queued.state, queued_again.state) == (SlotState.QUEUED, SlotState.QUEUED)
    assert queued_again.depth == 2
    assert await _queued(redis, keys) == [sortable_entry_id("1-0"), sortable_entry_id("2-0")]
    assert await redis.hlen(keys.thread(T, "qmsg")) == 2
    assert await redis.get(keys.lock(T)) == b"tok-a"
    assert await redis.exists(keys.stop(T), keys.pending_warnings(T)) == 2


async def test_a_resent_finish_after_release_is_released_and_leaves_the_new_holder_alone(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    assert (await queue.finish(first.lock, _ids(first))).state is SlotState.RELEASED

    second = await _submit(queue, "2-0", "tok-b")
    assert second.state is SlotState.RUN
    await redis.pexpire(keys.lock(T), 5_000)
    resent = await queue.finish(first.lock, _ids(first))
    assert resent.state is SlotState.RELEASED  # not LOST: its batch was recorded as answered
    assert await redis.get(keys.lock(T)) == b"tok-b"
    assert await redis.pttl(keys.lock(T)) <= 5_000  # not extended with the old holder's TTL
    assert await _queued(redis, keys) == [sortable_entry_id("2-0")]
    assert await redis.hexists(keys.thread(T, "qmsg"), sortable_entry_id("2-0")) is True


async def test_an_answered_entry_submitted_again_is_done_and_takes_nothing(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await queue.finish(first.lock, _ids(first))

    again = await _submit(queue, "1-0", "tok-z")
    assert (again.state, again.lock, again.items) == (SlotState.DONE, None, [])
    assert await redis.exists(keys.lock(T), keys.thread(T, "q"), keys.thread(T, "qmsg")) == 0


async def test_finish_after_the_lock_expired_is_lost_records_its_batch_and_leaves_the_rest(
    redis: aioredis.Redis, keys: Keys
) -> None:
    # The reply was sent, so the batch counts as answered (the next holder must not answer it
    # again); the lock and the messages queued behind the batch are not the old holder's any more.
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=0.2)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await _submit(queue, "2-0", "tok-b")

    async def expired() -> bool:
        return await redis.exists(keys.lock(T)) == 0

    await wait_until(expired, timeout=5.0)
    lost = await queue.finish(first.lock, _ids(first))
    assert (lost.state, lost.lock, lost.items) == (SlotState.LOST, None, [])
    assert await _queued(redis, keys) == [sortable_entry_id("2-0")]
    assert await redis.hkeys(keys.thread(T, "qmsg")) == [sortable_entry_id("2-0").encode()]
    assert await redis.zscore(keys.thread(T, "done"), sortable_entry_id("1-0")) is not None
    assert await redis.exists(keys.lock(T)) == 0  # not re-taken for the rest

    # the next holder answers only what is left
    resumed = await queue.resume(T, "tok-c")
    assert resumed.state is SlotState.RUN
    assert _ids(resumed) == [sortable_entry_id("2-0")]
    # a resend of the lost finish under the new holder's lock changes nothing
    assert (await queue.finish(first.lock, _ids(first))).state is SlotState.RELEASED
    assert await redis.get(keys.lock(T)) == b"tok-c"
    assert await _queued(redis, keys) == [sortable_entry_id("2-0")]


async def test_a_lost_finish_never_answers_the_new_holders_batch(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await redis.delete(keys.lock(T))
    second = await _submit(queue, "2-0", "tok-b")  # takes the lock, runs 1-0 and 2-0
    assert _ids(second) == [sortable_entry_id("1-0"), sortable_entry_id("2-0")]

    ttl_set = 5_000
    await redis.pexpire(keys.lock(T), ttl_set)
    assert (await queue.finish(first.lock, _ids(first))).state is SlotState.LOST
    assert await redis.get(keys.lock(T)) == b"tok-b"
    assert await redis.pttl(keys.lock(T)) <= ttl_set  # the lost holder did not extend it
    assert await _queued(redis, keys) == [sortable_entry_id("2-0")]
    assert second.lock is not None
    after = await queue.finish(second.lock, _ids(second))  # 1-0 is already done: no error
    assert after.state is SlotState.RELEASED
    assert await redis.exists(keys.thread(T, "q")) == 0


async def test_resume_of_an_empty_queue_is_empty_and_takes_no_lock(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    slot = await queue.resume(T, "tok-a")
    assert (slot.state, slot.lock) == (SlotState.EMPTY, None)
    assert await redis.exists(keys.lock(T)) == 0


async def test_resume_while_a_holder_has_the_lock_is_busy(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    await _submit(queue, "1-0", "tok-a")
    slot = await queue.resume(T, "tok-b")
    assert (slot.state, slot.depth, slot.lock, slot.items) == (SlotState.BUSY, 1, None, [])
    assert await redis.get(keys.lock(T)) == b"tok-a"


async def test_resume_of_an_orphaned_queue_takes_the_lock_and_runs_the_queue(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    await _submit(queue, "1-0", "tok-a")
    await _submit(queue, "2-0", "tok-b")
    await redis.delete(keys.lock(T))  # the holder died and its lock expired

    slot = await queue.resume(T, "tok-c")
    assert slot.state is SlotState.RUN
    assert slot.lock is not None and slot.lock.token == "tok-c"
    assert _ids(slot) == [sortable_entry_id("1-0"), sortable_entry_id("2-0")]
    assert await redis.get(keys.lock(T)) == b"tok-c"
    assert 0 < await redis.pttl(keys.lock(T)) <= queue.lock_ttl_s * 1000


async def test_taking_a_free_lock_clears_a_stale_stop_and_earlier_runs_warnings(
    redis: aioredis.Redis, keys: Keys
) -> None:
    warnings = PendingWarnings(redis, keys=keys)
    await warnings.add(T, "old-run", "You are repeating yourself.")
    await warnings.add("other", "run-x", "Not this thread's.")
    await redis.set(keys.stop(T), "1", ex=600)  # a /stop the previous turn never looked at

    queue = ThreadQueue(redis, keys=keys)
    assert (await _submit(queue, "1-0", "tok-a")).state is SlotState.RUN
    assert await redis.exists(keys.stop(T)) == 0
    assert await redis.exists(keys.pending_warnings(T)) == 0
    assert await warnings.peek("other", "run-x") == ["Not this thread's."]


async def test_resume_clears_a_stale_stop_and_warnings_too(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    await _submit(queue, "1-0", "tok-a")
    await redis.delete(keys.lock(T))
    await redis.set(keys.stop(T), "1", ex=600)
    await PendingWarnings(redis, keys=keys).add(T, "old-run", "loop")

    assert (await queue.resume(T, "tok-b")).state is SlotState.RUN
    assert await redis.exists(keys.stop(T), keys.pending_warnings(T)) == 0


async def test_a_queued_submit_leaves_the_running_holders_stop_and_warnings(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    locks = ThreadLocks(redis, keys=keys)
    warnings = PendingWarnings(redis, keys=keys)
    holder = await _submit(queue, "1-0", "tok-a")
    assert holder.lock is not None
    await warnings.add(T, "live-run", "loop")
    assert await locks.request_stop(T) is True

    assert (await _submit(queue, "2-0", "tok-b")).state is SlotState.QUEUED
    assert (await _submit(queue, "3-0", "tok-c", busy=BusyMode.REJECT)).state is SlotState.BUSY
    assert (await queue.resume(T, "tok-d")).state is SlotState.BUSY
    assert await warnings.peek(T, "live-run") == ["loop"]
    assert await locks.keep(holder.lock) == (True, True)  # the stop is still the holder's


async def test_run_slots_carry_the_open_question(redis: aioredis.Redis, keys: Keys) -> None:
    asked = PendingQuestion(asker_id="u1", text="Which one?", options=("a", "b"))
    await PendingQuestions(redis, keys=keys).put(T, asked)
    queue = ThreadQueue(redis, keys=keys)
    slot = await _submit(queue, "1-0", "tok-a")
    assert slot.question == asked
    assert (await _submit(queue, "2-0", "tok-b")).question is None  # only the runner needs it


async def test_finish_deletes_the_question_only_when_its_id_is_the_one_answered(
    redis: aioredis.Redis, keys: Keys
) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = PendingQuestion(asker_id="u1", text="Which one?", options=("a", "b"))
    await questions.put(T, asked)
    queue = ThreadQueue(redis, keys=keys)

    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await _submit(queue, "2-0", "tok-b")
    nxt = await queue.finish(first.lock, _ids(first), question_id="an-older-question")
    assert await questions.get(T) == asked
    assert nxt.question == asked

    assert nxt.lock is not None
    await queue.finish(nxt.lock, _ids(nxt), question_id=asked.question_id)
    assert await redis.exists(keys.question(T)) == 0


async def test_a_lost_finish_never_deletes_the_question(redis: aioredis.Redis, keys: Keys) -> None:
    questions = PendingQuestions(redis, keys=keys)
    asked = PendingQuestion(asker_id="u1", text="Which one?", options=("a", "b"))
    await questions.put(T, asked)
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await redis.set(keys.lock(T), "tok-b")  # expired and taken by another worker

    lost = await queue.finish(first.lock, _ids(first), question_id=asked.question_id)
    assert lost.state is SlotState.LOST
    assert await questions.get(T) == asked


async def test_state_reports_busy_unanswered_and_the_open_question(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    idle = await queue.state(T)
    assert (idle.busy, idle.unanswered, idle.question) == (False, 0, None)

    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await _submit(queue, "2-0", "tok-b")
    await _submit(queue, "3-0", "tok-c")
    asked = PendingQuestion(asker_id="u1", text="Which one?", options=("a", "b"))
    await PendingQuestions(redis, keys=keys).put(T, asked)
    busy = await queue.state(T)
    assert (busy.busy, busy.unanswered, busy.question) == (True, 3, asked)

    await queue.finish(first.lock, _ids(first))
    assert (await queue.state(T)).unanswered == 2


async def test_every_key_written_has_a_ttl_and_the_threads_hash_tag(
    redis: aioredis.Redis, keys: Keys, prefix: str
) -> None:
    queue = ThreadQueue(redis, keys=keys, lock_ttl_s=20.0)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await _submit(queue, "2-0", "tok-b")
    second = await queue.finish(first.lock, _ids(first))  # lock, q, qmsg, done, tries exist now
    assert second.lock is not None
    assert await queue.record(second.lock, b"answer")
    await queue.receipt(T, {0: "m1"})

    written = sorted([k.decode() async for k in redis.scan_iter(match=f"{prefix}*")])
    expected = {keys.lock(T), keys.thread(T, "q"), keys.thread(T, "qmsg"), keys.thread(T, "done")}
    expected |= {keys.thread(T, "tries"), keys.thread(T, "ledger")}
    assert set(written) == expected
    for key in written:
        # the cluster hash tag is the text between the first "{" and the next "}"
        assert re.search(r"\{([^}]*)\}", key).group(1) == T  # type: ignore[union-attr]
        assert await redis.pttl(key) > 0, key
    assert 19_000 < await redis.pttl(keys.lock(T)) <= 20_000
    for key in (keys.thread(T, "q"), keys.thread(T, "qmsg")):
        assert QUEUE_TTL_S - 60 <= await redis.ttl(key) <= QUEUE_TTL_S
    assert DONE_TTL_S - 60 <= await redis.ttl(keys.thread(T, "done")) <= DONE_TTL_S


async def test_done_remembers_when_each_entry_was_answered(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    before = time.time()
    await queue.finish(first.lock, _ids(first))
    when = await redis.zscore(keys.thread(T, "done"), sortable_entry_id("1-0"))
    assert when is not None and before - 1 <= when <= time.time() + 1


async def test_finish_trims_answered_entries_older_than_a_day(
    redis: aioredis.Redis, keys: Keys
) -> None:
    old = sortable_entry_id("1-0")
    await redis.zadd(keys.thread(T, "done"), {old: time.time() - DONE_TTL_S - 60})
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "2-0", "tok-a")
    assert first.lock is not None
    await queue.finish(first.lock, _ids(first))
    assert await redis.zscore(keys.thread(T, "done"), old) is None
    assert await redis.zscore(keys.thread(T, "done"), sortable_entry_id("2-0")) is not None


async def test_a_lost_finish_records_its_batch_in_a_done_set_that_expires(
    redis: aioredis.Redis, keys: Keys
) -> None:
    queue = ThreadQueue(redis, keys=keys)
    first = await _submit(queue, "1-0", "tok-a")
    assert first.lock is not None
    await redis.delete(keys.lock(T))  # the first batch of the thread, and the lock expired
    assert (await queue.finish(first.lock, _ids(first))).state is SlotState.LOST
    assert DONE_TTL_S - 60 <= await redis.ttl(keys.thread(T, "done")) <= DONE_TTL_S
