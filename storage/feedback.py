"""Votes on answers (👍/👎), one per user per answer, and which answer a bot message is.

Keys (shapes in `storage/keys.py`):

- `sb:{feedback}:votes` — hash, field `<platform>|<run_id>|<user>` → the vote as JSON
  (`switchboard.feedback.VoteRecord`); `sb:{feedback}:recent` — zset, the same fields scored by
  the time of their latest change. Both share the `{feedback}` tag, so one script writes a vote
  and trims both (votes older than `VOTE_KEEP_S`, and beyond `MAX_VOTES`). Votes are rare (a
  person pressing a button), so one slot carries them easily.
- `sb:answer:{<platform>:<chat>}:<message_id>` — string, JSON `[thread, run, asker]` for
  `ANSWER_TTL_S`: written for platforms where a reaction is the vote (Telegram), so a reaction
  on the message finds the run and its asker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from switchboard.feedback import AnswerRef, VoteRecord

if TYPE_CHECKING:
    from redis.typing import EncodableT

__all__ = [
    "ANSWER_TTL_S",
    "MAX_VOTES",
    "VOTE_KEEP_S",
    "FeedbackStore",
    "VoteChange",
]

ANSWER_TTL_S = 30 * 24 * 3600  # as long as a conversation mapping: older answers are not rated
VOTE_KEEP_S = 90 * 24 * 3600  # an operator's quarter of signal; older votes are dropped on write
MAX_VOTES = 100_000  # a hard bound whatever the vote rate; the oldest go first

# Returns 0 when the same vote was already stored (a resend, a press twice), 1 for a new vote,
# 2 for a changed one; then drops what is past the age and count bounds.
_RECORD = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local ok, prev = pcall(cjson.decode, old)
  if ok and type(prev) == 'table' and prev['value'] == ARGV[4] then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[5], 'LIMIT', 0, 100)
for _, f in ipairs(stale) do
  redis.call('HDEL', KEYS[1], f)
  redis.call('ZREM', KEYS[2], f)
end
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[6])
if over > 0 then
  for _, f in ipairs(redis.call('ZRANGE', KEYS[2], 0, over - 1)) do
    redis.call('HDEL', KEYS[1], f)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
end
if old then return 2 end
return 1
"""

_WITHDRAW = """
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('HDEL', KEYS[1], ARGV[1])
"""

_RECENT = """
local fields = redis.call('ZREVRANGEBYSCORE', KEYS[2], '+inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #fields == 0 then return {} end
return redis.call('HMGET', KEYS[1], unpack(fields))
"""


class VoteChange:
    """What recording a vote did (the metric counts only new and changed votes)."""

    SAME = 0
    NEW = 1
    CHANGED = 2


class FeedbackStore:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        answer_ttl_s: int = ANSWER_TTL_S,
        keep_s: int = VOTE_KEEP_S,
        max_votes: int = MAX_VOTES,
    ) -> None:
        self._r = client
        self._keys = keys
        self._answer_ttl = answer_ttl_s
        self._keep_s = keep_s
        self._max = max_votes
        self._record = client.register_script(_RECORD)
        self._withdraw = client.register_script(_WITHDRAW)
        self._recent = client.register_script(_RECENT)

    def _vote_keys(self) -> list[str]:
        return [self._keys.feedback("votes"), self._keys.feedback("recent")]

    async def remember_answer(
        self, platform: str, chat_id: str, message_ids: Sequence[str], answer: AnswerRef
    ) -> None:
        """Which run (and asker) these bot messages answered; one round trip, shared with
        whatever else this loop turn sends (`storage.autopipeline`) when it is one message."""
        if not message_ids:
            return
        value = answer.encode()
        with redis_errors("answer mapping"):
            if len(message_ids) == 1:  # the usual answer: shares the batch finish's round trip
                key = self._keys.answer(platform, chat_id, message_ids[0])
                await self._r.set(key, value, ex=self._answer_ttl)
                return
            async with self._r.pipeline(transaction=False) as pipe:
                for mid in message_ids:
                    pipe.set(self._keys.answer(platform, chat_id, mid), value, ex=self._answer_ttl)
                await pipe.execute()

    async def answer_for(self, platform: str, chat_id: str, message_id: str) -> AnswerRef | None:
        with redis_errors("answer lookup"):
            raw = await self._r.get(self._keys.answer(platform, chat_id, message_id))
        return AnswerRef.decode(raw) if raw is not None else None

    async def record(self, vote: VoteRecord) -> int:
        """Store `vote`, replacing the user's earlier one on the same answer; a `VoteChange`."""
        cutoff = vote.at - self._keep_s
        args: list[EncodableT] = [
            vote.field,
            vote.encode(),
            vote.at,
            str(vote.value),
            cutoff,
            self._max,
        ]
        with redis_errors("vote record"):
            return int(await self._record(keys=self._vote_keys(), args=args))

    async def withdraw(self, platform: str, run_id: str, user_id: str) -> bool:
        """Remove the user's vote on an answer (the reaction was taken back)."""
        field = f"{platform}|{run_id}|{user_id}"
        with redis_errors("vote withdraw"):
            return bool(await self._withdraw(keys=self._vote_keys(), args=[field]))

    async def recent(self, *, since: float = 0.0, limit: int = 100) -> list[VoteRecord]:
        """Votes changed at or after `since` (epoch seconds), newest first, at most `limit`."""
        limit = max(1, min(limit, 10_000))
        with redis_errors("vote list"):
            raws = await self._recent(keys=self._vote_keys(), args=[since, limit])
        votes = (VoteRecord.decode(raw) for raw in raws or () if raw is not None)
        return [v for v in votes if v is not None]
