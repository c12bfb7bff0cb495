"""The bindings in force for the whole fleet (`SWITCHBOARD_BINDINGS`), in one Redis hash.

`sb:bindings` holds the rules as a JSON list (`doc`), a `version` raised by every change, where
they came from (`origin`: the file or the admin API) and the digest of the file text last
stored (`file_digest`). Every process polls `version` (one HGET every couple of seconds, never
on a turn) and takes the new rules when it moved, so a change reaches every worker.

At start a process offers its file (`adopt`): an unchanged file keeps whatever is stored (a
`PUT /api/admin/bindings` since then stays in force); a changed one replaces it, so a deploy
with a new file applies it. One key, one script per change: atomic, and fine on a cluster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys

__all__ = ["BindingsStore", "StoredBindings"]

# KEYS[1] the hash; ARGV: doc, origin, now, file digest ("" for a PUT), adopt ("1": keep the
# stored rules when they came from this very file text). Returns the version in force.
_PUT = """
if ARGV[5] == '1' and redis.call('HGET', KEYS[1], 'file_digest') == ARGV[4]
   and redis.call('HEXISTS', KEYS[1], 'doc') == 1 then
  return tonumber(redis.call('HGET', KEYS[1], 'version'))
end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'doc', ARGV[1], 'origin', ARGV[2], 'updated_at', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'file_digest', ARGV[4]) end
return version
"""


@dataclass(frozen=True, slots=True)
class StoredBindings:
    doc: str  # a JSON list of rules, validated before it was stored
    version: int
    origin: str
    updated_at: float


class BindingsStore:
    def __init__(self, client: redis.Redis, *, keys: Keys) -> None:
        self._r = client
        self._key = keys.bindings()
        self._put = client.register_script(_PUT)

    async def adopt(self, doc: str, *, origin: str, file_digest: str) -> StoredBindings:
        """Offer the file's rules at start; returns the rules in force afterwards."""
        await self._run(doc, origin, file_digest, adopt=True)
        stored = await self.read()
        assert stored is not None  # the script stored them or found them stored
        return stored

    async def put(self, doc: str, *, origin: str, file_digest: str = "") -> int:
        """Make `doc` the rules in force everywhere; returns its version."""
        return await self._run(doc, origin, file_digest, adopt=False)

    async def version(self) -> int:
        with redis_errors("bindings version read"):
            raw = await self._r.hget(self._key, "version")
        return int(raw) if raw is not None else 0

    async def read(self) -> StoredBindings | None:
        with redis_errors("bindings read"):
            raw = await self._r.hgetall(self._key)
        fields = {as_text(k): as_text(v) for k, v in raw.items()}
        if "doc" not in fields:
            return None
        return StoredBindings(
            doc=fields["doc"],
            version=int(fields.get("version") or 0),
            origin=fields.get("origin", ""),
            updated_at=float(fields.get("updated_at") or 0),
        )

    async def _run(self, doc: str, origin: str, file_digest: str, *, adopt: bool) -> int:
        args = [doc, origin, f"{time.time():.3f}", file_digest, "1" if adopt else "0"]
        with redis_errors("bindings write"):
            return int(await self._put(keys=[self._key], args=args))
