"""Key families: every key `keys.py` formats, as a pattern, with what bounds the family.

A family either expires (each key has a TTL) or has a documented bound here: a key without a TTL
that matches no bounded family is unbounded, and the soak test
(`tests/integration/storage/test_bounded_keys.py`) fails on it. `store_stats` counts the families
of a live store for operators (`switchboard store stats`): SCAN for the counts and TTLs, `MEMORY
USAGE` on a sample of each family for its size.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import redis.asyncio as redis

from storage.failures import redis_errors

__all__ = ["FAMILIES", "FamilyStats", "KeyFamily", "family_of", "scan_keys", "store_stats"]


@dataclass(frozen=True, slots=True)
class KeyFamily:
    """`name` as keys.py's table writes it (without the prefix); `bound` says what limits the
    family's keys that have no TTL ("" for a family whose keys always expire)."""

    name: str
    pattern: re.Pattern[str]
    bound: str = ""


def _f(name: str, pattern: str, bound: str = "") -> KeyFamily:
    return KeyFamily(name, re.compile(pattern), bound)


_T = r"\{[^}]+\}"  # a hash tag
_CHECKPOINT = (
    "one checkpoint per thread (plus SWITCHBOARD_CHECKPOINTS_KEEP), its messages within "
    "SWITCHBOARD_HISTORY_TOKENS; without a TTL only when SWITCHBOARD_CHECKPOINT_TTL_DAYS=0"
)
_OPERATOR = "operator data: one per account or link, kept until revoked or deleted"

FAMILIES: tuple[KeyFamily, ...] = (
    _f(
        "inbox",
        rf"inbox(:{_T})?",
        "unfinished entries only (finished ones are deleted); appends are refused past 100,000",
    ),
    _f("inbox:layouts", r"inbox:layouts", "one member per shard count ever configured"),
    _f(
        "orphans",
        rf"orphans(:{_T})?",
        "one member per thread waiting for a holder, removed when checked",
    ),
    _f("failures", r"failures", ""),
    _f("bindings", r"bindings", "one key: the bindings in force, replaced whole on a change"),
    _f("console:<session>", r"console:.+"),
    _f("lease:<name>", r"lease:.+"),
    _f("lease-members:<group>", r"lease-members:.+"),
    _f("pace:{<bot>}:<scope>", rf"pace:{_T}:.+"),
    _f("dedupe:{<chat>}:<id>", rf"dedupe:{_T}:.+"),
    _f("conv:<conversation>", r"conv:.+"),
    _f("msg:<platform>:<chat>:<message>", r"msg:.+"),
    _f("answer:{<chat>}:<message>", rf"answer:{_T}:.+"),
    _f("{<thread>}:cp:<part>", rf"{_T}:cp:(idx|chk|blob|wr|widx|ridx)", _CHECKPOINT),
    _f(
        "{<thread>}:<turn state>",
        rf"{_T}:(lock|stop|q|qmsg|done|tries|ledger|busy|warn|question"
        r"|remote|replies|ctx:mark|ctx:cache)",
    ),
    _f(
        "warn:index",
        r"warn:index",
        "one member per thread with pending loop warnings, evicted past 10,000",
    ),
    _f("observed:{<place>}", rf"observed:{_T}"),
    _f("qid:<question>", r"qid:.+"),
    _f("rate:{<sender>}", rf"rate:{_T}"),
    _f("rate:notice:{<sender>}", rf"rate:notice:{_T}"),
    _f("notice:<platform>:<chat>", r"notice:.+"),
    _f(
        "{access}:<account, key, link>",
        r"\{access\}:(account|accounts|apikey|link|linked"
        r"|acctlinks|links)(:.+)?",
        _OPERATOR,
    ),
    _f("{access}:<link token, rate>", r"\{access\}:(linktoken|linkpending|linkrate):.+"),
    _f(
        "{feedback}:votes|recent",
        r"\{feedback\}:(votes|recent)",
        "votes past 90 days or 100,000 dropped on every write",
    ),
    _f(
        "usage:{<user>}:limits",
        rf"usage:{_T}:limits",
        "one admin override per user, removed by `usage limit … default`",
    ),
    _f("usage:{<user>}:<window>", rf"usage:{_T}:(day|week|turn|notice):.+"),
)


def family_of(key: str, prefix: str) -> KeyFamily | None:
    """The family of a key under `prefix`, or None when keys.py documents no such key."""
    if not key.startswith(prefix):
        return None
    rest = key[len(prefix) :]
    for family in FAMILIES:
        if family.pattern.fullmatch(rest):
            return family
    return None


@dataclass(slots=True)
class FamilyStats:
    """A family in a live store: keys, those without a TTL, and memory estimated from a sample."""

    name: str
    keys: int = 0
    without_ttl: int = 0
    sampled: int = 0
    sampled_bytes: int = 0

    @property
    def bytes(self) -> int:
        """The family's memory: the sample's mean times the count."""
        return self.sampled_bytes * self.keys // self.sampled if self.sampled else 0


async def scan_keys(client: redis.Redis, prefix: str) -> AsyncIterator[str]:
    """Every key under the prefix (every primary of a cluster), once."""
    pattern = "".join(f"\\{c}" if c in "*?[]\\" else c for c in prefix) + "*"
    with redis_errors("store scan"):
        async for raw in client.scan_iter(match=pattern, count=1000):
            yield raw.decode() if isinstance(raw, bytes) else str(raw)


async def store_stats(client: redis.Redis, prefix: str, *, sample: int = 50) -> list[FamilyStats]:
    """Key families under the prefix, biggest first; keys of no known family are grouped as
    `(undocumented) <first part>`."""
    found: dict[str, FamilyStats] = {}
    batch: list[tuple[str, FamilyStats]] = []
    async for key in scan_keys(client, prefix):
        family = family_of(key, prefix)
        name = family.name if family else f"(undocumented) {key[len(prefix) :].split(':')[0]}"
        stats = found.setdefault(name, FamilyStats(name))
        stats.keys += 1
        batch.append((key, stats))
        if len(batch) >= 500:
            await _measure(client, batch, sample)
            batch = []
    await _measure(client, batch, sample)
    return sorted(found.values(), key=lambda s: (-s.bytes, s.name))


async def _measure(client: redis.Redis, batch: list[tuple[str, FamilyStats]], sample: int) -> None:
    """TTL of every key, MEMORY USAGE of those still under their family's sample, one pipeline."""
    if not batch:
        return
    pipe = client.pipeline(transaction=False)
    sized: list[bool] = []
    planned: dict[str, int] = {}
    for key, stats in batch:
        pipe.ttl(key)
        take = stats.sampled + planned.get(stats.name, 0) < sample
        sized.append(take)
        if take:
            planned[stats.name] = planned.get(stats.name, 0) + 1
            pipe.memory_usage(key, samples=0)
    with redis_errors("store stats"):
        replies = iter(await pipe.execute())
    for (_, stats), take in zip(batch, sized, strict=True):
        if next(replies) == -1:
            stats.without_ttl += 1
        if take:
            size = next(replies)
            if size is not None:
                stats.sampled += 1
                stats.sampled_bytes += int(size)
