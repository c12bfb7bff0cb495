"""The clarification question a thread is waiting on, answered (consumed) exactly once.

`sb:{thread}:question` holds JSON `{"question_id", "asker_id", "text", "options", "expires_at",
"message_id"}` with a TTL equal to the question's remaining life. Consume is GET + id check + DEL in
one script, so a button press and a typed answer racing each other resume the run once.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict, dataclass, field, replace

import redis.asyncio as redis
from redis.exceptions import RedisError

from switchboard.errors import StorageError
from switchboard.storage.keys import Keys

__all__ = ["QUESTION_TTL_S", "PendingQuestion", "PendingQuestions"]

QUESTION_TTL_S = 7 * 24 * 3600  # People answer later; after a week the question is dropped.

_CONSUME = """
local raw = redis.call('GET', KEYS[1])
if not raw then return false end
if ARGV[1] ~= '' and cjson.decode(raw)['question_id'] ~= ARGV[1] then return false end
redis.call('DEL', KEYS[1])
return raw
"""
_SET_MESSAGE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local doc = cjson.decode(raw)
if doc['question_id'] ~= ARGV[1] then return 0 end
doc['message_id'] = ARGV[2]
redis.call('SET', KEYS[1], cjson.encode(doc), 'KEEPTTL')
return 1
"""


def new_question_id() -> str:
    """Short enough for Telegram's 64-byte callback data with an option index appended."""
    return secrets.token_urlsafe(9)


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    asker_id: str
    text: str
    options: tuple[str, ...] = ()
    question_id: str = field(default_factory=new_question_id)
    expires_at: float = field(default_factory=lambda: time.time() + QUESTION_TTL_S)
    message_id: str = ""

    def to_json(self) -> str:
        data = asdict(self)
        data["options"] = list(self.options)
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: bytes | str) -> PendingQuestion:
        data = json.loads(raw)
        return cls(
            asker_id=str(data["asker_id"]),
            text=str(data["text"]),
            options=tuple(str(o) for o in data.get("options") or ()),
            question_id=str(data["question_id"]),
            expires_at=float(data["expires_at"]),
            message_id=str(data.get("message_id") or ""),
        )


class PendingQuestions:
    def __init__(self, client: redis.Redis, *, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._consume = client.register_script(_CONSUME)
        self._set_message = client.register_script(_SET_MESSAGE)

    async def put(self, thread_id: str, question: PendingQuestion) -> None:
        """Store the thread's open question, replacing any older one."""
        ttl = max(1, int(question.expires_at - time.time()))
        try:
            await self._r.set(self._keys.question(thread_id), question.to_json(), ex=ttl)
        except RedisError as exc:
            raise StorageError(f"question store failed: {exc.__class__.__name__}") from None

    async def get(self, thread_id: str) -> PendingQuestion | None:
        try:
            raw = await self._r.get(self._keys.question(thread_id))
        except RedisError as exc:
            raise StorageError(f"question read failed: {exc.__class__.__name__}") from None
        return _parse(raw)

    async def consume(self, thread_id: str, question_id: str = "") -> PendingQuestion | None:
        """Take the open question (only if its id matches, when given); None if already taken."""
        try:
            raw = await self._consume(keys=[self._keys.question(thread_id)], args=[question_id])
        except RedisError as exc:
            raise StorageError(f"question consume failed: {exc.__class__.__name__}") from None
        return _parse(raw)

    async def set_message(self, thread_id: str, question: PendingQuestion, message_id: str) -> None:
        """Remember which platform message shows the question, to edit it once answered."""
        try:
            await self._set_message(
                keys=[self._keys.question(thread_id)], args=[question.question_id, message_id]
            )
        except RedisError as exc:
            raise StorageError(f"question update failed: {exc.__class__.__name__}") from None

    async def restore(self, thread_id: str, question: PendingQuestion) -> None:
        """Put a consumed question back (its resume failed before reaching the agent)."""
        await self.put(thread_id, replace(question))


def _parse(raw: bytes | str | None) -> PendingQuestion | None:
    if not raw:
        return None
    try:
        return PendingQuestion.from_json(raw)
    except (ValueError, KeyError, TypeError):
        return None
