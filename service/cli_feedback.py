"""Operator command for votes on answers: `switchboard feedback list [--since WHEN] [--limit N]`.

One line per vote, newest first, tab-separated for `cut` and `awk`: platform, user, value (`up` or
`down`), time (UTC, ISO 8601), then the answer's run id. Exit codes as `cli_errors` sets them: 2 for
settings or storage, 1 for a refused request (an unreadable `--since`).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from service.cli_errors import fail, run_command
from switchboard.feedback import VoteRecord

__all__ = ["add_feedback_commands", "format_vote"]


def add_feedback_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    feedback = subparsers.add_parser("feedback", help="votes people gave the bot's answers")
    sub = feedback.add_subparsers(dest="feedback_command", metavar="COMMAND", required=True)
    listing = sub.add_parser("list", help="recent votes, newest first, one per line")
    listing.add_argument(
        "--since", default="", help="ISO date or time, epoch seconds, or 7d/24h/30m ago"
    )
    listing.add_argument("--limit", type=int, default=1000, help="at most this many (1-10000)")
    listing.set_defaults(func=_list)


def format_vote(vote: VoteRecord) -> str:
    at = datetime.fromtimestamp(vote.at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return "\t".join((vote.platform, vote.user_id, str(vote.value), at, vote.run_id))


def _list(args: argparse.Namespace) -> int:
    from service.feedback_api import parse_since

    try:
        since = parse_since(args.since) if args.since else 0.0
        if not 1 <= args.limit <= 10_000:
            raise ValueError("--limit must be 1 to 10000")
    except ValueError as exc:
        fail(str(exc))
        return 1
    return run_command(_print_recent(since, args.limit), refused=())


async def _print_recent(since: float, limit: int) -> int:
    for vote in await _recent(since, limit):
        print(format_vote(vote))
    return 0


async def _recent(since: float, limit: int) -> list[VoteRecord]:
    from service.cli_redis import cli_redis
    from service.settings import load_settings
    from storage import FeedbackStore, Keys

    settings = load_settings()
    async with cli_redis(settings) as client:
        return await FeedbackStore(client, keys=Keys(settings.redis_prefix)).recent(
            since=since, limit=limit
        )
