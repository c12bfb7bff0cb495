"""What the manager keeps about conversation context: how far each thread has seen, the context
last read from the platform, and the recent messages observed in group chats.

- `sb:{<thread>}:ctx:mark`: `ContextMark.encode()` (`<previous>|<at>`), kept as long as the
  thread mapping (refreshed on every write), so a catch-up knows where the bot left off.
- `sb:{<thread>}:ctx:cache`: a JSON list of `ContextMessage.as_dict()`, the context read from
  the platform for the mark's turn (written with the mark, so it covers what came before
  `mark.at`), for `CONTEXT_CACHE_TTL_S`: a retried turn reads the platform once, which matters
  where history calls are limited to about one a minute (Slack, for apps outside its
  Marketplace); a later turn reads only what is newer than the mark and merges it in.
- `sb:observed:{<platform>:<place>}`: a zset of one group chat's (or forum topic's) recent
  messages, score = message id, member = the message's JSON; trimmed to the newest `keep` and
  expiring `OBSERVED_TTL_S` after the last one, so an idle chat leaves nothing behind.

A turn reads the mark, the cache and (for Telegram groups) the observed messages in one round
trip (a pipeline of single-key reads, which a cluster client splits by slot), and writes the mark
and cache in one script (both carry the thread's hash tag); recording an observed message is one
script on its single key (add, trim, expire).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys
from storage.thread_map import THREAD_TTL_S
from switchboard.conversation import ContextMark, ContextMessage, ContextState, message_order

__all__ = [
    "CONTEXT_CACHE_TTL_S",
    "OBSERVED_TTL_S",
    "ContextRecords",
    "ContextState",
]

# KEYS: mark cache. ARGV: mark mark_ttl [cache cache_ttl].
_SAVE = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[3] then redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4]) end
return 1
"""
# KEYS: observed. ARGV: member score keep ttl.
_OBSERVE = """
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[3]) + 1))
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
"""

CONTEXT_CACHE_TTL_S = 600  # a retried turn reads the platform once
OBSERVED_TTL_S = 48 * 3600  # yesterday's discussion still counts; an idle group's record goes


class ContextRecords:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        mark_ttl_s: int = THREAD_TTL_S,
        cache_ttl_s: int = CONTEXT_CACHE_TTL_S,
        observed_ttl_s: int = OBSERVED_TTL_S,
    ) -> None:
        self._r = client
        self._keys = keys
        self._mark_ttl = mark_ttl_s
        self._cache_ttl = cache_ttl_s
        self._observed_ttl = observed_ttl_s
        self._save = client.register_script(_SAVE)
        self._observe = client.register_script(_OBSERVE)

    async def load(
        self,
        thread_id: str,
        *,
        observed: tuple[str, str] | None = None,
        before: str = "",
        limit: int = 0,
    ) -> ContextState:
        """The thread's mark and cached context and, with `observed` = (platform, place), the
        newest `limit` messages observed there with an id below `before`; one round trip."""
        with redis_errors("context read"):
            pipe = self._r.pipeline(transaction=False)
            pipe.get(self._keys.context_mark(thread_id))
            pipe.get(self._keys.context_cache(thread_id))
            if observed is not None and limit > 0:
                top = message_order(before)[0] - 1 if before else "+inf"
                pipe.zrevrangebyscore(
                    self._keys.observed(*observed), top, "-inf", start=0, num=limit
                )
            results = await pipe.execute()
        mark_raw, cache_raw = results[0], results[1]
        mark = ContextMark.decode(as_text(mark_raw)) if mark_raw is not None else None
        seen = results[2] if len(results) > 2 else []
        return ContextState(mark=mark, cached=_messages(cache_raw), observed=_observed(seen))

    async def save(
        self,
        thread_id: str,
        *,
        mark: ContextMark,
        cache: Sequence[ContextMessage] | None = None,
    ) -> None:
        """Set the thread's mark and, when given, its cached context (one script)."""
        args: list[str | int] = [mark.encode(), self._mark_ttl]
        if cache is not None:
            args += [json.dumps([m.as_dict() for m in cache], ensure_ascii=False), self._cache_ttl]
        keys = [self._keys.context_mark(thread_id), self._keys.context_cache(thread_id)]
        with redis_errors("context write"):
            await self._save(keys=keys, args=args)

    async def observe(
        self, platform: str, place: str, message: ContextMessage, *, keep: int
    ) -> None:
        """Record a message seen in a group chat, keeping the newest `keep` (one script)."""
        score = message_order(message.message_id)[0]
        if keep <= 0 or score < 0:
            return
        key = self._keys.observed(platform, place)
        member = json.dumps(message.as_dict(), ensure_ascii=False, sort_keys=True)
        with redis_errors("observed record"):
            await self._observe(keys=[key], args=[member, score, keep, self._observed_ttl])


def _messages(raw: bytes | str | None) -> tuple[ContextMessage, ...] | None:
    """A cached list; an unreadable one counts as not cached (it is read again)."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data, list):
            return None
        return tuple(ContextMessage.from_dict(item) for item in data)
    except (ValueError, TypeError, KeyError):
        return None


def _observed(members: Sequence[bytes | str]) -> tuple[ContextMessage, ...]:
    """Observed members, newest first, one per message id (a redelivery may differ in bytes)."""
    out: list[ContextMessage] = []
    seen: set[str] = set()
    for member in members:
        try:
            message = ContextMessage.from_dict(json.loads(member))
        except (ValueError, TypeError, KeyError):
            continue
        if message.message_id not in seen:
            seen.add(message.message_id)
            out.append(message)
    return tuple(out)
