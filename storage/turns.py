"""A turn's start and end, each one script over the thread's keys (one hash tag, one slot).

`begin` takes the thread lock and, in the same step, clears a stale stop request, takes whatever
a crashed holder left queued, takes the open clarification question (the new message answers it),
and drops loop warnings left by earlier runs (no run of this thread is active once we hold the
lock). `end` takes what queued during the turn, or releases the lock when nothing did, so a sender
that queued a moment later either is drained here or finds the lock free.

Keys touched: `lock`, `stop`, `pending`, `question`, `warnruns` and `warn:<run>` of the thread
(shapes and TTLs in keys.py; values as owned by locks.py, pending.py, questions.py, warnings.py).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import redis.asyncio as redis
from redis.exceptions import RedisError

from storage.keys import Keys
from storage.locks import LOCK_TTL_S, Lock
from storage.pending import PendingMessage, parse_pending
from storage.questions import PendingQuestion, parse_question
from switchboard.errors import StorageError

__all__ = ["TurnGate", "TurnStart"]

_BEGIN = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
redis.call('DEL', KEYS[2])
local queued = redis.call('LRANGE', KEYS[3], 0, -1)
if #queued > 0 then redis.call('DEL', KEYS[3]) end
local question = ''
if ARGV[4] == '1' then
  question = redis.call('GET', KEYS[4]) or ''
  if question ~= '' then redis.call('DEL', KEYS[4]) end
end
local runs = redis.call('SMEMBERS', KEYS[5])
for _, run in ipairs(runs) do redis.call('DEL', ARGV[3] .. run) end
if #runs > 0 then redis.call('DEL', KEYS[5]) end
return {queued, question}
"""
_END = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
if #items > 0 then
  redis.call('DEL', KEYS[1])
  return {0, items}
end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return {1, items}
"""


@dataclass(frozen=True, slots=True)
class TurnStart:
    lock: Lock
    queued: list[PendingMessage]  # left by a holder that died, oldest first
    question: PendingQuestion | None  # the open question this turn's text answers


class TurnGate:
    def __init__(self, client: redis.Redis, *, keys: Keys, lock_ttl_s: float = LOCK_TTL_S) -> None:
        self._keys = keys
        self.lock_ttl_s = lock_ttl_s
        self._begin = client.register_script(_BEGIN)
        self._end = client.register_script(_END)

    async def begin(self, thread_id: str, *, take_question: bool = True) -> TurnStart | None:
        """Start a turn, or None when another holder runs one (the caller queues instead)."""
        k = self._keys
        token = secrets.token_hex(16)
        try:
            raw = await self._begin(
                keys=[
                    k.lock(thread_id),
                    k.stop(thread_id),
                    k.pending(thread_id),
                    k.question(thread_id),
                    k.warning_runs(thread_id),
                ],
                args=[
                    token,
                    max(1, int(self.lock_ttl_s * 1000)),
                    k.warnings(thread_id, ""),
                    "1" if take_question else "0",
                ],
            )
        except RedisError as exc:
            raise StorageError(f"turn start failed: {exc.__class__.__name__}") from None
        if raw is None:
            return None
        queued_raw, question_raw = raw
        return TurnStart(
            lock=Lock(thread_id, token, self.lock_ttl_s),
            queued=parse_pending(thread_id, queued_raw),
            question=parse_question(question_raw),
        )

    async def end(self, lock: Lock) -> tuple[list[PendingMessage], bool]:
        """(messages queued during the turn, False) with the lock still held, or ([], True) when
        nothing was queued: the turn is over and the lock released (if it was still ours)."""
        thread_id = lock.thread_id
        try:
            released, raw_items = await self._end(
                keys=[self._keys.pending(thread_id), self._keys.lock(thread_id)], args=[lock.token]
            )
        except RedisError as exc:
            raise StorageError(f"turn end failed: {exc.__class__.__name__}") from None
        return parse_pending(thread_id, raw_items), bool(released)
