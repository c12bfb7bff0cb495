"""How the inbox and the orphan index are split into shards, and which layouts a fleet has used.

One shard (the single-node default) keeps today's keys, `sb:inbox` and `sb:orphans`, so a running
deployment upgrades without migration. With N > 1 shard i of N is `sb:inbox:{<tag>}` and
`sb:orphans:{<tag>}`, where the tag `<N>.<i>.<salt>` is chosen so its hash slot lies in the i-th
N-th of the slot range: a cluster whose masters own equal contiguous slot ranges (what `redis-cli
--cluster create` makes) gets an even share of the shards on every master, so intake is spread
over all of them instead of wherever N random hashes happen to land.

A message goes to the shard of its chat (`route`), so every message of a conversation is in one
stream, read in order. A thread's orphan mark goes to the shard of its thread id.

`sb:inbox:layouts` (a set of shard counts) remembers every layout a process announced, so
workers of a new shard count keep draining the streams of an old one (a rolling change of
`SWITCHBOARD_INBOX_SHARDS`) until nothing is left there; its members are shard counts, a handful
at most.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from storage.failures import redis_errors
from storage.keys import Keys

__all__ = ["LEARN_EVERY_S", "Layout", "announce", "others", "shard_tag", "tag_count"]

LEARN_EVERY_S = 10.0  # how often a worker rereads the announced layouts: one small read, rarely


@functools.cache
def shard_tag(count: int, index: int) -> str:
    """The hash tag of shard `index` of `count`: the first salt whose slot falls in the
    index-th count-th of the slot range (a few dozen CRC16s at most, computed once)."""
    salt = 0
    while True:
        tag = f"{count}.{index}.{salt}"
        if key_slot(tag.encode()) * count // REDIS_CLUSTER_HASH_SLOTS == index:
            return tag
        salt += 1


def tag_count(tag: str) -> int:
    """The shard count a tag belongs to (`<N>.<i>.<salt>`); 1 for the untagged layout."""
    return int(tag.partition(".")[0]) if tag else 1


@dataclass(frozen=True, slots=True)
class Layout:
    """`count` shards: their tags ("" for the single, untagged shard) and the routing."""

    count: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("a layout has at least one shard")

    @property
    def tags(self) -> tuple[str, ...]:
        if self.count == 1:
            return ("",)
        return tuple(shard_tag(self.count, i) for i in range(self.count))

    def tag_for(self, route: str) -> str:
        """The shard of a route (a chat, a thread id): stable across processes and restarts."""
        if self.count == 1:
            return ""
        return shard_tag(self.count, zlib.crc32(route.encode()) % self.count)


async def announce(client: Any, keys: Keys, count: int) -> tuple[int, ...]:
    """Record this process's shard count and return the other counts processes announced (the
    layouts to drain). A store written by a release before shards (`sb:inbox` or `sb:orphans`
    exists) counts as layout 1, so its streams are drained too."""
    with redis_errors("inbox layout"):
        async with client.pipeline(transaction=False) as pipe:
            pipe.sadd(keys.inbox_layouts(), count)
            pipe.exists(keys.inbox())
            pipe.exists(keys.orphans())
            _added, inbox, orphans = await pipe.execute()
        if count != 1 and (inbox or orphans):
            await client.sadd(keys.inbox_layouts(), 1)
        members = await client.smembers(keys.inbox_layouts())
    return others(members, count)


def others(members: Iterable[bytes | str | int], count: int) -> tuple[int, ...]:
    """The announced shard counts other than `count`, in order."""
    counts = {int(m) for m in members if str(m.decode() if isinstance(m, bytes) else m).isdigit()}
    return tuple(sorted(counts - {count}))
