"""A message's way in, in one round trip: its dedupe claim and its sender's flood-limit hit.

The two scripts touch different hash slots (the chat's, the sender's), so they cannot be one
script; they are independent, so one pipeline carries both. A duplicate is not counted twice:
the flood limit counts a message by its own id (`storage/ratelimit.py`).
"""

from __future__ import annotations

import redis.asyncio as redis

from storage.dedupe import Dedupe, claim_of
from storage.failures import redis_errors
from storage.ratelimit import RateLimiter, decision
from storage.scripts import run_scripts
from switchboard.state import Claim, RateDecision

__all__ = ["Admission"]


class Admission:
    def __init__(self, client: redis.Redis, *, dedupe: Dedupe, rate: RateLimiter) -> None:
        self._r = client
        self._dedupe = dedupe
        self._rate = rate

    async def admit(
        self,
        platform: str,
        provider_ids: list[str],
        *,
        scope: str,
        owner: str,
        sender_id: str,
        message_id: str,
    ) -> tuple[Claim, RateDecision]:
        """Claim the message for the inbox entry `owner` and count it against its sender."""
        calls = [
            self._dedupe.claim_call(platform, provider_ids, scope=scope, owner=owner),
            self._rate.hit_call(platform, sender_id, message_id),
        ]
        with redis_errors("admission"):
            claimed, code = await run_scripts(self._r, calls)
        return claim_of(claimed), decision(code)
