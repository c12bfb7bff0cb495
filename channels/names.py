"""Display names looked up from a platform (Slack `users.info`, a Discord guild member), kept in
this process so each person is looked up once while they stay in use.

Bounded twice: an entry lives `ttl_s` (a renamed person shows their new name within the hour),
and past `max_entries` the least recently used is dropped (about 100 bytes each).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

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
