"""Send budgets every platform shares: the windows a call books (`Quota`) and what waits on them.

A platform limits sends per scope (Discord: 5 per 5 s in a channel and 50 per second for the
bot; Slack: about one a second in a channel and 50 `chat.update`s a minute in a workspace). An
adapter names the quotas each call books and waits on a `Pacer` before calling its SDK; the pacer
is this process's `LocalPacer`, or a budget the fleet shares in Redis
(`channels.pacing.SharedPacer`), so platform subpackages never see storage. The SDKs' own 429
handling stays in force underneath: pacing only makes 429s rare.

`LocalPacer` books a call in every window it names at the earliest time they all allow, without
an await between reading and appending, so concurrent senders queue up in call order without a
lock, each then sleeping until its slot. Slots stay sorted per scope, since a slot pushed late by
one window may land after slots booked later in another.

Memory: scopes are kept in least-recently-used order; every `_SWEEP_EVERY` bookings the idle ones
at the front are dropped, and past `MAX_SCOPES` the least recently used window is dropped, at
worst letting that scope's next send go out early and meet one 429, which the SDK waits out.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, TypeVar

__all__ = [
    "MAX_SCOPES",
    "Books",
    "BudgetBusy",
    "LocalPacer",
    "Pacer",
    "Quota",
    "Rate",
    "book",
    "cosmetic",
    "essential",
    "is_cosmetic",
]

MAX_SCOPES = 10_000  # scopes whose windows one process keeps (least recently used dropped past it)
_SWEEP_EVERY = 256  # bookings between sweeps of idle scopes


class BudgetBusy(Exception):
    """A cosmetic update (a streamed draft or edit) found its budget taken and was not sent: it
    yields to the replies and notices waiting for that budget, and is tried again later."""


_cosmetic: ContextVar[bool] = ContextVar("switchboard_cosmetic_send", default=False)


@contextlib.contextmanager
def cosmetic() -> Iterator[None]:
    """Calls made in this block are partial updates of a streamed reply: each goes only if its
    budget has room at once (`book`), never queuing ahead of a reply or notice."""
    token = _cosmetic.set(True)
    try:
        yield
    finally:
        _cosmetic.reset(token)


@contextlib.contextmanager
def essential() -> Iterator[None]:
    """Calls made in this block wait for their budget even inside `cosmetic()`: a stream's
    first message standing in for a call that booked the budget and landed nothing."""
    token = _cosmetic.set(False)
    try:
        yield
    finally:
        _cosmetic.reset(token)


def is_cosmetic() -> bool:
    """Whether the running call is a partial update (inside `cosmetic()`)."""
    return _cosmetic.get()


_K = TypeVar("_K", contravariant=True)


class Books(Protocol[_K]):
    """Anything that books sends by some key: a `Pacer` by its quotas, Telegram's per chat."""

    async def wait(self, key: _K, /) -> None: ...

    async def try_now(self, key: _K, /) -> bool: ...


async def book(pacer: Books[_K], key: _K) -> None:
    """Wait for the budget `key` names; inside `cosmetic()`, take it only if free now, else
    raise `BudgetBusy` (nothing booked)."""
    if not is_cosmetic():
        await pacer.wait(key)
    elif not await pacer.try_now(key):
        raise BudgetBusy(str(key))


@dataclass(frozen=True, slots=True)
class Rate:
    """At most `limit` sends in any `seconds`-long window."""

    limit: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Quota:
    """One window a call books: `rate` in `scope` (e.g. `c:<channel>`, `all` for the bot)."""

    scope: str
    rate: Rate


class Pacer(Protocol):
    """What an adapter waits on before a send, edit, stream update or notice."""

    async def wait(self, quotas: Sequence[Quota]) -> None: ...

    async def try_now(self, quotas: Sequence[Quota]) -> bool:
        """Book a send only if it may go at once; False (nothing booked) otherwise. For
        cosmetic updates (a streamed draft), which should yield the budget to real messages."""
        ...

    async def hold(self, quotas: Sequence[Quota], seconds: float) -> None:
        """The platform answered 429 "retry after `seconds`": no send in these windows until
        then (in the fleet, for a shared pacer)."""
        ...


class LocalPacer:
    """Sliding windows of booked send times, counted by this process alone."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_scopes: int = MAX_SCOPES,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._max_scopes = max_scopes
        self._slots: OrderedDict[str, list[float]] = OrderedDict()  # least recently used first
        self._horizon: dict[str, float] = {}  # each scope's window length, for the sweep
        self._bookings = 0

    def __len__(self) -> int:
        """Scopes whose windows are held (at most `max_scopes`)."""
        return len(self._slots)

    def scopes(self) -> list[str]:
        """The scopes whose windows are held, least recently used first."""
        return list(self._slots)

    def reserve(self, quotas: Sequence[Quota], *, most: float | None = None) -> float | None:
        """Book one send in every quota's window; seconds to wait before sending. With `most`,
        a send that would wait longer books nothing and gets None."""
        now = self._clock()
        at = now
        windows: list[tuple[list[float], Rate]] = []
        for quota in quotas:
            slots = self._window(quota, now)
            limit = quota.rate.limit
            if len(slots) >= limit:
                at = max(at, slots[-limit] + quota.rate.seconds)
            windows.append((slots, quota.rate))
        if most is not None and at - now > most:
            return None
        for slots, _ in windows:
            bisect.insort(slots, at)
        self._bookings += 1
        if self._bookings % _SWEEP_EVERY == 0:
            self._sweep(now)
        return at - now

    async def wait(self, quotas: Sequence[Quota]) -> None:
        """Sleep until every quota allows one more send."""
        delay = self.reserve(quotas) or 0.0
        if delay > 0:
            await self._sleep(delay)

    async def try_now(self, quotas: Sequence[Quota]) -> bool:
        return self.reserve(quotas, most=0.0) is not None

    async def hold(self, quotas: Sequence[Quota], seconds: float) -> None:
        """Fill each window with `limit` slots that keep it full until `seconds` from now."""
        now = self._clock()
        for quota in quotas:
            slots = self._window(quota, now)
            until = now + seconds - quota.rate.seconds
            for _ in range(quota.rate.limit):
                bisect.insort(slots, until)

    def _window(self, quota: Quota, now: float) -> list[float]:
        """The scope's live slots (expired ones dropped), marked most recently used."""
        slots = self._slots.get(quota.scope)
        if slots is None:
            slots = self._slots[quota.scope] = []
            if len(self._slots) > self._max_scopes:
                dropped, _ = self._slots.popitem(last=False)
                self._horizon.pop(dropped, None)
        else:
            self._slots.move_to_end(quota.scope)
        self._horizon[quota.scope] = quota.rate.seconds
        expired = bisect.bisect_right(slots, now - quota.rate.seconds)
        del slots[:expired]
        return slots

    def _sweep(self, now: float) -> None:
        """Drop idle scopes from the least recently used end, up to the first live one: the
        cost is the number dropped, not the table's size."""
        while self._slots:
            scope, slots = next(iter(self._slots.items()))
            if slots and slots[-1] > now - self._horizon.get(scope, 0.0):
                return
            del self._slots[scope]
            self._horizon.pop(scope, None)
