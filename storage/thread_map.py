"""Conversation key → agent thread id, and bot reply message → thread id.

Values are thread ids (32 hex chars). Both mappings slide: every use refreshes the TTL (30 days by
default), which is longer than any auto-reply window, so a reply to an old bot message still
continues its thread while the conversation is alive.

Reply ids are kept per conversation, not per turn: a thread's index (`sb:{<thread>}:replies`)
holds its newest REPLIES_PER_THREAD bot messages, and the mappings of older ones are deleted, so
a long conversation holds a fixed number of them. A reply to a bot message older than that
starts a new conversation.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys
from storage.scripts import ScriptCall

__all__ = ["KEEP_FIRST", "REPLIES_PER_THREAD", "THREAD_TTL_S", "Conversation", "ThreadMap"]

THREAD_TTL_S = 30 * 24 * 3600  # Longer than any platform's auto-reply window; refreshed on use.
REPLIES_PER_THREAD = 50  # Bot messages of one conversation a reply can continue it from.

# Get the stored value (KEYS[1]) or store the proposed one (ARGV[1]), refreshing the TTL (ARGV[2])
# either way; one script so two concurrent first writers agree on one value: here two first
# messages of one conversation, in `remote_threads.py` two workers that each made a server thread.
KEEP_FIRST = """
local current = redis.call('GET', KEYS[1])
if current then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return current
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return ARGV[1]
"""


# The existing thread id, its TTL refreshed; nil for a conversation not started (`resolve` starts
# it, once the message is known to be one that may).
_TOUCH = """
local current = redis.call('GET', KEYS[1])
if current then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return current
"""


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation as the operator console lists it."""

    key: str  # the conversation key (`tg:<chat>`, `slack:<team>:<channel>:<thread>`, …)
    thread_id: str
    active_at: float  # when a message last resolved it (epoch seconds)


def new_thread_id() -> str:
    return uuid.uuid4().hex


class ThreadMap:
    def __init__(self, client: redis.Redis, *, keys: Keys, ttl_s: int = THREAD_TTL_S) -> None:
        self._r = client
        self._keys = keys
        self._ttl = ttl_s
        self._resolve = client.register_script(KEEP_FIRST)
        self._touch = client.register_script(_TOUCH)

    async def resolve(self, conversation_key: str) -> str:
        """The conversation's thread id, created on first use."""
        with redis_errors("thread resolve"):
            raw = await self._resolve(
                keys=[self._keys.conversation(conversation_key)], args=[new_thread_id(), self._ttl]
            )
        return as_text(raw)

    def touch_call(self, conversation_key: str) -> ScriptCall:
        """The thread of a started conversation, its TTL refreshed as `resolve` does (nil for
        one not started), as a script call to run in one round trip with others."""
        return ScriptCall(self._touch, [self._keys.conversation(conversation_key)], [self._ttl])

    async def peek(self, conversation_key: str) -> str | None:
        """The thread id if the conversation has one, without creating or refreshing it."""
        with redis_errors("thread lookup"):
            raw = await self._r.get(self._keys.conversation(conversation_key))
        return as_text(raw) if raw is not None else None

    async def start_new(self, conversation_key: str) -> str:
        """Point the conversation at a fresh thread (`/new`); one SET, so it is atomic."""
        thread_id = new_thread_id()
        with redis_errors("thread reset"):
            await self._r.set(self._keys.conversation(conversation_key), thread_id, ex=self._ttl)
        return thread_id

    async def remember_messages(
        self, platform: str, chat_id: str, message_ids: list[str], thread_id: str
    ) -> None:
        """Record the bot's reply ids so a later "reply to the bot" finds this thread, and forget
        those past the thread's newest REPLIES_PER_THREAD. One pipeline (split by slot on a
        cluster) writes the mappings and the index and reads what the index let go; deleting
        those mappings is a second round trip, only once a conversation is past the limit. Only
        the thread's lock holder records replies, so the index's steps need no transaction."""
        if not message_ids:
            return
        index = self._keys.replies(thread_id)
        now = time.time()
        members = {f"{platform}\0{chat_id}\0{mid}": now for mid in message_ids}
        beyond = -(REPLIES_PER_THREAD + 1)
        with redis_errors("reply mapping"):
            async with self._r.pipeline(transaction=False) as pipe:
                for mid in message_ids:
                    pipe.set(self._keys.message(platform, chat_id, mid), thread_id, ex=self._ttl)
                pipe.zadd(index, members, nx=True)
                pipe.zrange(index, 0, beyond)
                pipe.zremrangebyrank(index, 0, beyond)
                pipe.expire(index, self._ttl)
                dropped = (await pipe.execute())[-3]
            if dropped:
                await self._r.delete(*(self._message_key(raw) for raw in dropped))

    def _message_key(self, member: bytes | str) -> str:
        text = member.decode() if isinstance(member, bytes) else member
        platform, chat_id, mid = text.split("\0", 2)
        return self._keys.message(platform, chat_id, mid)

    async def thread_for_message(self, platform: str, chat_id: str, message_id: str) -> str | None:
        """The thread a bot message belongs to (refreshing its TTL), or None."""
        key = self._keys.message(platform, chat_id, message_id)
        with redis_errors("reply lookup"):
            raw = await self._r.getex(key, ex=self._ttl)
        return as_text(raw) if raw is not None else None

    async def recent(self, *, limit: int = 50, scan_most: int = 5000) -> list[Conversation]:
        """The most recently active conversations, for an operator; nothing is written per turn
        for it. Every message refreshes its mapping's TTL, so the time left tells when it was
        last used. Looks at no more than `scan_most` mappings (SCAN, on every node of a cluster):
        on a larger store this is the most recent of a sample, not of all."""
        prefix = self._keys.conversation("")
        with redis_errors("conversation list"):
            found: list[str] = []
            async for key in self._r.scan_iter(match=f"{prefix}*", count=1000):
                found.append(key.decode() if isinstance(key, bytes) else key)
                if len(found) >= scan_most:
                    break
            rows: list[object] = []
            for start in range(0, len(found), 500):
                async with self._r.pipeline(transaction=False) as pipe:
                    for key in found[start : start + 500]:
                        pipe.get(key)
                        pipe.ttl(key)
                    rows.extend(await pipe.execute())
        now = time.time()
        listed = [
            Conversation(key[len(prefix) :], thread.decode(), now - (self._ttl - int(ttl)))
            for key, thread, ttl in zip(found, rows[0::2], rows[1::2], strict=True)
            if isinstance(thread, bytes) and isinstance(ttl, int) and ttl > 0
        ]
        return sorted(listed, key=lambda c: c.active_at, reverse=True)[:limit]
