"""Operator commands for usage budgets: `switchboard usage show|reset|limit PLATFORM USER_ID`.

They open Redis the way the service does and show raw amounts (USD) and the limits in force,
which chat never shows. `reset` forgets today's spend, and this week's only with `--weekly`, so a
daily reset still leaves the weekly budget in force. `limit` sets a per-user override (`default`
drops it, `0` = unlimited). Exit codes as `cli_errors` sets them: 2 for settings or storage, 1 for a
refused request (unknown platform, malformed id).

The channel layer (and with it the agent and LangChain) is imported only when a usage command
runs, so building the parser keeps every other command's start-up fast.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from service.cli_errors import run_command
from service.limits import check_limit_usd
from switchboard.errors import SwitchboardError

if TYPE_CHECKING:
    from channels.usage import UsageDesk, UsageReport, WindowUsage

__all__ = ["add_usage_commands", "format_report"]

_Handler = Callable[[argparse.Namespace, "UsageDesk"], Awaitable[int]]


def add_usage_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    usage = subparsers.add_parser("usage", help="inspect and reset per-user usage budgets")
    sub = usage.add_subparsers(dest="usage_command", metavar="COMMAND", required=True)
    show = sub.add_parser("show", help="a user's spend and limits today and this week")
    _user_args(show)
    show.set_defaults(func=_command(_show))
    reset = sub.add_parser("reset", help="forget a user's spend today (and this week)")
    _user_args(reset)
    reset.add_argument("--weekly", action="store_true", help="also reset this week's spend")
    reset.set_defaults(func=_command(_reset))
    limit = sub.add_parser("limit", help="override a user's limits (USD; 0 = unlimited)")
    _user_args(limit)
    limit.add_argument("--daily", type=_usd_or_default, help="USD per day, or 'default'")
    limit.add_argument("--weekly", type=_usd_or_default, help="USD per week, or 'default'")
    limit.set_defaults(func=_command(_limit))


def _user_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("platform", metavar="PLATFORM", help="telegram, slack, discord, console")
    parser.add_argument("user_id", metavar="USER_ID", help="the platform's id of the user")


_DEFAULT = "default"


def _usd_or_default(value: str) -> float | str:
    if value.strip().lower() == _DEFAULT:
        return _DEFAULT
    try:
        usd = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected USD or 'default', got {value!r}") from None
    try:
        return check_limit_usd(usd)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _command(handler: _Handler) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        return run_command(_with_desk(handler, args), refused=(SwitchboardError, ValueError))

    return run


async def _with_desk(handler: _Handler, args: argparse.Namespace) -> int:
    from channels.usage import Budget, UsageDesk
    from service.cli_redis import cli_redis
    from service.settings import load_settings
    from service.usage_api import check_user
    from storage import Keys, UsageLedger

    args.platform = check_user(args.platform, args.user_id)
    settings = load_settings()
    budget = Budget.from_usd(settings.budget_daily_usd, settings.budget_weekly_usd)
    async with cli_redis(settings) as client:
        ledger = UsageLedger(client, keys=Keys(settings.redis_prefix))
        return await handler(args, UsageDesk(ledger=ledger, budget=budget))


def _usd(micros: int) -> str:
    return f"{micros / 1_000_000:.6f}"


def _row(usage: WindowUsage, now: float) -> tuple[str, ...]:
    from channels.usage import percent_text

    limit = usage.limit_micros
    shown_limit = _usd(limit) if limit else "unlimited"
    if usage.overridden:
        shown_limit += " (override)"
    hours = max(0, math.ceil(usage.window.seconds_left(now) / 3600))
    resets = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(usage.window.end))
    return (
        str(usage.window.kind),
        usage.window.id,
        _usd(usage.used_micros),
        shown_limit,
        f"{percent_text(usage.used_micros, limit)}%" if limit else "-",
        f"{resets} (in {hours} h)",
    )


def format_report(report: UsageReport) -> str:
    header = ("WINDOW", "PERIOD", "USED (USD)", "LIMIT (USD)", "USED %", "RESETS")
    rows = [header, *(_row(w, report.now) for w in report.windows)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join([f"{report.platform} user {report.user_id}", *lines])


async def _show(args: argparse.Namespace, desk: UsageDesk) -> int:
    print(format_report(await desk.report(args.platform, args.user_id)))
    return 0


async def _reset(args: argparse.Namespace, desk: UsageDesk) -> int:
    await desk.reset(args.platform, args.user_id, weekly=args.weekly)
    what = "today's and this week's" if args.weekly else "today's"
    print(f"Reset {what} usage of {args.platform} user {args.user_id}.")
    print(format_report(await desk.report(args.platform, args.user_id)))
    return 0


async def _limit(args: argparse.Namespace, desk: UsageDesk) -> int:
    from channels.usage import usd_to_micros
    from storage import UsageLimits

    current = (await desk.ledger.snapshot(args.platform, args.user_id)).override

    def pick(given: float | str | None, kept: int | None) -> int | None:
        if given is None:
            return kept
        return None if given == _DEFAULT else usd_to_micros(float(given))

    limits = UsageLimits(
        pick(args.daily, current.daily_micros), pick(args.weekly, current.weekly_micros)
    )
    await desk.set_limits(args.platform, args.user_id, limits)
    print(format_report(await desk.report(args.platform, args.user_id)))
    return 0
