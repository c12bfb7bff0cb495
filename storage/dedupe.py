"""Claim a message's provider ids once, so platform retries and dual deliveries get one reply.

The claim belongs to the inbox entry that made it: value `<entry id>` while the entry is being
handled, `<entry id>:done` once it was answered. The same entry may claim again (a resend after a
lost reply, or another worker finishing a crashed worker's entry) and is told whether it already
finished; any other entry carrying one of the ids is a redelivery. The 24 h TTL outlives every
platform's redelivery window (Slack retries for ~1 h, Telegram keeps unconfirmed updates 24 h).
All ids of one message share the chat's hash slot, so one script claims all or none.
"""

from __future__ import annotations

import redis.asyncio as redis

from storage.failures import redis_errors
from storage.keys import Keys
from storage.scripts import ScriptCall
from switchboard.state import Claim

__all__ = ["DEDUPE_TTL_S", "Claim", "Dedupe", "claim_of"]

DEDUPE_TTL_S = 24 * 3600  # Telegram keeps undelivered updates for 24 h; the longest retry window.

_CLAIM = """
local done = ARGV[1] .. ':done'
local finished = false
for _, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if v == done then finished = true
  elseif v and v ~= ARGV[1] then return 'dup' end
end
if finished then return 'done' end
for _, key in ipairs(KEYS) do redis.call('SET', key, ARGV[1], 'EX', ARGV[2]) end
return 'new'
"""
_FINISH = """
for _, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if v == ARGV[1] or not v then redis.call('SET', key, ARGV[1] .. ':done', 'EX', ARGV[2]) end
end
return 1
"""


class Dedupe:
    def __init__(self, client: redis.Redis, *, keys: Keys, ttl_s: int = DEDUPE_TTL_S) -> None:
        self._keys = keys
        self._ttl = ttl_s
        self._claim = client.register_script(_CLAIM)
        self._finish = client.register_script(_FINISH)

    def _slots(self, platform: str, provider_ids: list[str], scope: str) -> list[str]:
        return [self._keys.dedupe(platform, pid, scope) for pid in sorted(set(provider_ids))]

    async def claim(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> Claim:
        """Claim every id of one message for the inbox entry `owner`, all or none."""
        call = self.claim_call(platform, provider_ids, scope=scope, owner=owner)
        with redis_errors("dedupe claim"):
            raw = await self._claim(keys=call.keys, args=call.args)
        return claim_of(raw)

    def claim_call(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> ScriptCall:
        """`claim` as a script call, to run in one round trip with others (`storage.scripts`)."""
        return ScriptCall(
            self._claim, self._slots(platform, provider_ids, scope), [owner, self._ttl]
        )

    async def finish(
        self, platform: str, provider_ids: list[str], *, scope: str, owner: str
    ) -> None:
        """Mark the message answered, so a reclaimed copy of its entry is not answered again."""
        with redis_errors("dedupe finish"):
            await self._finish(
                keys=self._slots(platform, provider_ids, scope), args=[owner, self._ttl]
            )


def claim_of(raw: object) -> Claim:
    """The claim script's reply as a `Claim`."""
    return Claim(raw.decode() if isinstance(raw, bytes) else str(raw))
