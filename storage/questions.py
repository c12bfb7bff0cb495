"""The clarification question a thread is waiting on, and which thread a question id belongs to.

`sb:{thread}:question` holds JSON `{"question_id", "asker_id", "text", "options", "expires_at",
"message_id"}` with a TTL equal to the question's remaining life (ms precision; a question whose
`expires_at` has passed is never returned). `sb:qid:<question_id>` holds the thread id for the
same time, so a button press finds its thread from the id it carries, whatever message it is on.
The question is removed by the turn that answered it (`ThreadQueue.finish`), under the thread
lock, so a press and a typed answer racing each other resume the run once.
"""

from __future__ import annotations

import time

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from switchboard.state import QUESTION_TTL_S, PendingQuestion, parse_question

__all__ = ["QUESTION_TTL_S", "PendingQuestion", "PendingQuestions", "parse_question"]

_SET_MESSAGE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ok, doc = pcall(cjson.decode, raw)
if not ok or type(doc) ~= 'table' or doc['question_id'] ~= ARGV[1] then return 0 end
doc['message_id'] = ARGV[2]
redis.call('SET', KEYS[1], cjson.encode(doc), 'KEEPTTL')
return 1
"""


class PendingQuestions:
    def __init__(self, client: redis.Redis, *, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._set_message = client.register_script(_SET_MESSAGE)

    async def put(self, thread_id: str, question: PendingQuestion) -> None:
        """Store the thread's open question, replacing any older one (an expired one is not kept).
        The id index is written first (one pipelined round trip), so a press never finds a
        question without its thread."""
        key = self._keys.question(thread_id)
        ttl_ms = int((question.expires_at - time.time()) * 1000)
        with redis_errors("question store"):
            if ttl_ms > 0:
                pipe = self._r.pipeline(transaction=False)
                pipe.set(self._keys.question_thread(question.question_id), thread_id, px=ttl_ms)
                pipe.set(key, question.to_json(), px=ttl_ms)
                await pipe.execute()
            else:
                await self._r.delete(key)

    async def get(self, thread_id: str) -> PendingQuestion | None:
        with redis_errors("question read"):
            raw = await self._r.get(self._keys.question(thread_id))
        return parse_question(raw)

    async def thread_of(self, question_id: str) -> str | None:
        """The thread a question id was asked in, while the question lives."""
        with redis_errors("question lookup"):
            raw = await self._r.get(self._keys.question_thread(question_id))
        return raw.decode() if isinstance(raw, bytes) else raw

    async def set_message(self, thread_id: str, question: PendingQuestion, message_id: str) -> None:
        """Remember which platform message shows the question, to edit it once answered."""
        with redis_errors("question update"):
            await self._set_message(
                keys=[self._keys.question(thread_id)], args=[question.question_id, message_id]
            )
