"""Display names looked up from a platform (Slack `users.info`, a Discord guild member), kept in
this process so each person is looked up once while they stay in use.

`lookup` is the read both adapters share: cached names first, then a bounded number of the rest
fetched at once, what they find kept under `<scope>:<user>` (a Slack workspace, a Discord guild).

Bounded twice: an entry lives `ttl_s` (a renamed person shows their new name within the hour),
and past `max_entries` the least recently used is dropped (about 100 bytes each).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable

__all__ = ["NAME_TTL_S", "Names"]

NAME_TTL_S = 3600.0
_MAX_ENTRIES = 10_000


class Names:
    def __init__(
        self,
        *,
        ttl_s: float = NAME_TTL_S,
        max_entries: int = _MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl_s
        self._max = max_entries
        self._clock = clock
        self._names: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._names)

    def get(self, key: str) -> str | None:
        """The name, while it is fresh."""
        found = self._names.get(key)
        if found is None:
            return None
        name, expires = found
        if expires <= self._clock():
            del self._names[key]
            return None
        self._names.move_to_end(key)
        return name

    def put(self, key: str, name: str) -> None:
        self._names[key] = (name, self._clock() + self._ttl)
        self._names.move_to_end(key)
        while len(self._names) > self._max:
            self._names.popitem(last=False)

    async def lookup(
        self,
        scope: str,
        users: Iterable[str],
        fetch: Callable[[str], Awaitable[str | None]],
        *,
        most: int,
    ) -> dict[str, str]:
        """The names of `users` in `scope` that are known: fresh cached ones, and those found by
        fetching at most `most` of the others at once (so one read never waits on a crowd).
        Anyone left out keeps whatever stands in for a name at the caller."""
        names: dict[str, str] = {}
        wanted: list[str] = []
        for user in users:
            known = self.get(f"{scope}:{user}")
            if known is not None:
                names[user] = known
            elif len(wanted) < most:
                wanted.append(user)
        found = await asyncio.gather(*(fetch(user) for user in wanted))
        for user, name in zip(wanted, found, strict=True):
            if name:
                self.put(f"{scope}:{user}", name)
                names[user] = name
        return names
