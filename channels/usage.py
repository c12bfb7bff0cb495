"""Usage budgets in chat: refuse a turn over budget, record what a turn cost, answer `/usage`.

The manager calls three methods and knows nothing else about budgets:

- before a turn, `admit(msg, adapter.notify)` (or `refusal(msg)` for the bare decision);
- after a turn, `record(msg, result)`: never raises, so it may run in the background;
- for the `/usage` command, `usage_text(msg)`.

Rules (issue 18): a user's spend is kept per UTC day and per ISO week (from Monday 00:00 UTC);
"used >= limit" means the window is spent. With both configured limits at 0 budgets are off and
the check makes no Redis call at all. When Redis cannot be read the turn is allowed (an outage
must not silence the bot) and the failure logged. Users see percentages and reset times, never a
dollar amount; those are for operators (`report`, the CLI and the admin API). An admin's override
(`UsageLimits`, per platform user) replaces a configured limit for one user, `0` meaning unlimited.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from agent.result import TurnResult
from channels import metrics
from channels.message import InboundMessage
from storage import UsageLedger, UsageLimits, UsageSnapshot, Window, WindowKind
from switchboard.errors import StorageError

__all__ = [
    "Budget",
    "Notify",
    "UsageDesk",
    "UsageReport",
    "WindowUsage",
    "notice_text",
    "percent_text",
    "usd_to_micros",
]

_log = structlog.get_logger(__name__)

Notify = Callable[[InboundMessage, str], Awaitable[None]]

_WINDOW_NAMES = {WindowKind.DAILY: "daily", WindowKind.WEEKLY: "weekly"}
_WINDOW_LABELS = {WindowKind.DAILY: "Today", WindowKind.WEEKLY: "This week"}


def usd_to_micros(usd: float) -> int:
    return round(usd * 1_000_000)


@dataclass(frozen=True, slots=True)
class Budget:
    """The configured per-user limits in microdollars; 0 = unlimited."""

    daily_micros: int = 0
    weekly_micros: int = 0

    @classmethod
    def from_usd(cls, daily: float, weekly: float) -> Budget:
        return cls(usd_to_micros(daily), usd_to_micros(weekly))

    @property
    def enabled(self) -> bool:
        return self.daily_micros > 0 or self.weekly_micros > 0


@dataclass(frozen=True, slots=True)
class WindowUsage:
    """One window as an operator sees it: raw amounts, the limit in force, where it came from."""

    window: Window
    used_micros: int
    limit_micros: int  # 0 = unlimited
    overridden: bool

    @property
    def exceeded(self) -> bool:
        return self.limit_micros > 0 and self.used_micros >= self.limit_micros


@dataclass(frozen=True, slots=True)
class UsageReport:
    platform: str
    user_id: str
    daily: WindowUsage
    weekly: WindowUsage
    now: float

    @property
    def windows(self) -> tuple[WindowUsage, WindowUsage]:
        return (self.daily, self.weekly)


def percent_text(used_micros: int, limit_micros: int) -> str:
    """One decimal, rounded down, and exactly `100.0` at or over the limit: a user at 99.96 %
    still has a little left, so they must not read 100.0 yet."""
    if used_micros >= limit_micros:
        return "100.0"
    tenths = max(0, used_micros) * 1000 // limit_micros
    return f"{tenths // 10}.{tenths % 10}"


def _reset_at(window: Window) -> str:
    end = datetime.fromtimestamp(window.end, tz=UTC)
    if window.kind is WindowKind.WEEKLY:
        return f"{end:%A %Y-%m-%d} 00:00 UTC"
    return f"{end:%Y-%m-%d} 00:00 UTC"


def _hours_left(window: Window, now: float) -> int:
    return max(1, math.ceil(window.seconds_left(now) / 3600))


def notice_text(window: Window, now: float) -> str:
    """The over-budget notice: which window, when it resets (UTC, and in how many hours)."""
    return (
        f"You've reached your {_WINDOW_NAMES[window.kind]} usage limit, so I can't answer "
        f"right now. It resets at {_reset_at(window)} (in {_hours_left(window, now)} h)."
    )


def _limit(configured: int, override: int | None) -> tuple[int, bool]:
    return (configured, False) if override is None else (max(0, override), True)


class UsageDesk:
    """Budget decisions for the manager, over a `UsageLedger`."""

    def __init__(self, *, ledger: UsageLedger, budget: Budget) -> None:
        self._ledger = ledger
        self.budget = budget

    @property
    def ledger(self) -> UsageLedger:
        return self._ledger

    # -- before a turn ---------------------------------------------------------------------

    async def refusal(self, msg: InboundMessage) -> str | None:
        """None: the turn may run. Otherwise the turn must not run, and the text is the notice
        to send ("" when this chat was already told during this window)."""
        if not self.budget.enabled:
            return None
        platform = str(msg.platform)
        try:
            report = await self.report(platform, msg.sender_id)
        except StorageError as exc:
            _log.warning("usage.check_failed", error=str(exc))
            return None
        spent = next((w for w in (report.weekly, report.daily) if w.exceeded), None)
        if spent is None:
            return None
        window = spent.window
        metrics.BUDGET_REFUSALS.labels(platform=platform, window=str(window.kind)).inc()
        try:
            tell = await self._ledger.claim_notice(platform, msg.sender_id, msg.chat_id, window)
        except StorageError as exc:
            _log.warning("usage.notice_claim_failed", error=str(exc))
            tell = True
        _log.info("message.over_budget", window=str(window.kind), notified=tell)
        return notice_text(window, report.now) if tell else ""

    async def admit(self, msg: InboundMessage, notify: Notify) -> bool:
        """True when the turn may run; otherwise sends the notice (once per window) and False.
        The manager's one line: `if not await self._usage.admit(msg, adapter.notify): return`."""
        notice = await self.refusal(msg)
        if notice is None:
            return True
        if notice:
            await notify(msg, notice)
        return False

    # -- after a turn ----------------------------------------------------------------------

    async def record(self, msg: InboundMessage, result: TurnResult) -> None:
        """Charge the turn to its sender, once (the run id makes a resend count nothing).
        Metrics always; Redis only for a positive cost. Never raises."""
        platform = str(msg.platform)
        usage = result.usage
        cost = usage.cost_micros
        try:
            for call in usage.calls:
                if call.input_tokens:
                    metrics.MODEL_TOKENS.labels(platform, call.model, "input").inc(
                        call.input_tokens
                    )
                if call.output_tokens:
                    metrics.MODEL_TOKENS.labels(platform, call.model, "output").inc(
                        call.output_tokens
                    )
            for model, micros in usage.cost_by_model().items():
                if micros > 0:
                    metrics.MODEL_SPEND.labels(platform, model).inc(micros)
            if cost is None or cost <= 0:
                return
            await self._ledger.record(platform, msg.sender_id, result.run_id, cost)
        except StorageError as exc:
            _log.warning("usage.record_failed", run_id=result.run_id, micros=cost, error=str(exc))
        except Exception as exc:  # a side task of the turn: log it, never fail the reply
            _log.error("usage.record_crashed", error=type(exc).__name__, exc_info=exc)

    # -- /usage ----------------------------------------------------------------------------

    async def usage_text(self, msg: InboundMessage) -> str:
        """The `/usage` reply: percent per limited window and its reset, no amounts."""
        if not self.budget.enabled:
            return "No usage limits are set here."
        try:
            report = await self.report(str(msg.platform), msg.sender_id)
        except StorageError as exc:
            _log.warning("usage.read_failed", error=str(exc))
            return "I couldn't read your usage just now. Please try again in a moment."
        lines = [
            f"{_WINDOW_LABELS[w.window.kind]}: {percent_text(w.used_micros, w.limit_micros)}% "
            f"of your {_WINDOW_NAMES[w.window.kind]} limit used; resets {_reset_at(w.window)} "
            f"(in {_hours_left(w.window, report.now)} h)"
            for w in report.windows
            if w.limit_micros > 0
        ]
        if not lines:
            return "You have no usage limits."
        return "\n".join(["Your usage:", *lines])

    # -- operators -------------------------------------------------------------------------

    async def report(self, platform: str, user_id: str) -> UsageReport:
        """Raw spend and the limits in force for one user (one Redis round trip)."""
        snap: UsageSnapshot = await self._ledger.snapshot(platform, user_id)
        daily, daily_over = _limit(self.budget.daily_micros, snap.override.daily_micros)
        weekly, weekly_over = _limit(self.budget.weekly_micros, snap.override.weekly_micros)
        return UsageReport(
            platform=platform,
            user_id=user_id,
            daily=WindowUsage(snap.daily, snap.daily_micros, daily, daily_over),
            weekly=WindowUsage(snap.weekly, snap.weekly_micros, weekly, weekly_over),
            now=self._ledger.now(),
        )

    async def top(self, limit: int = 20) -> list[UsageReport]:
        """This week's biggest spenders, each as `report` shows them (the operator console)."""
        spenders = await self._ledger.top_spenders(limit=limit)
        return list(await asyncio.gather(*(self.report(s.platform, s.user_id) for s in spenders)))

    async def reset(self, platform: str, user_id: str, *, weekly: bool = False) -> None:
        await self._ledger.reset(platform, user_id, weekly=weekly)
        _log.info("usage.reset", platform=platform, weekly=weekly)

    async def set_limits(self, platform: str, user_id: str, limits: UsageLimits) -> None:
        await self._ledger.set_limits(platform, user_id, limits)
        _log.info("usage.limits_set", platform=platform)
