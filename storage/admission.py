"""A message's way in, in one round trip: its dedupe claim, its sender's flood-limit hit and,
when the caller may use it, its conversation's thread (if the conversation was started).

The scripts touch different hash slots (the chat's, the sender's, the conversation's), so they
cannot be one script; they are independent, so one pipeline carries them. A duplicate is not
counted twice: the flood limit counts a message by its own id (`storage/ratelimit.py`).
"""

from __future__ import annotations

import redis.asyncio as redis

from storage.decoding import as_text
from storage.dedupe import Dedupe, claim_of
from storage.failures import redis_errors
from storage.ratelimit import RateLimiter, decision
from storage.scripts import run_scripts
from storage.thread_map import ThreadMap
from switchboard.state import Admitted

__all__ = ["Admission"]


class Admission:
    def __init__(
        self, client: redis.Redis, *, dedupe: Dedupe, rate: RateLimiter, threads: ThreadMap
    ) -> None:
        self._r = client
        self._dedupe = dedupe
        self._rate = rate
        self._threads = threads

    async def admit(
        self,
        platform: str,
        provider_ids: list[str],
        *,
        scope: str,
        owner: str,
        sender_id: str,
        message_id: str,
        conversation: str | None = None,
    ) -> Admitted:
        """Claim the message for the inbox entry `owner` and count it against its sender; with
        `conversation`, read its thread too (refreshed as `ThreadMap.resolve` does; None when
        the conversation was not started, which only `resolve` does, for a message that may)."""
        calls = [
            self._dedupe.claim_call(platform, provider_ids, scope=scope, owner=owner),
            self._rate.hit_call(platform, sender_id, message_id),
        ]
        if conversation is not None:
            calls.append(self._threads.touch_call(conversation))
        with redis_errors("admission"):
            replies = await run_scripts(self._r, calls)
        started = replies[2] if conversation is not None else None
        thread_id = as_text(started) if started is not None else None
        return Admitted(claim_of(replies[0]), decision(replies[1]), thread_id)
