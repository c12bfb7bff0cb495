"""`switchboard bindings explain|check`: why a conversation behaves as it does, and whether a
bindings file would be accepted, before an operator deploys it.

`explain PLATFORM WORKSPACE CHANNEL [USER]` prints the matching rules (most specific first) and
every setting with its value and origin. The account a rule may match on is the one the
workspace (or, with `--dm`, the user) is linked to: looked up in the store when some rule needs
it, unless `--account` names it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from channels.bindings import Bindings, Subject, explain, load_bindings
from service.settings import Settings, load_settings
from switchboard.errors import SwitchboardError

__all__ = ["add_bindings_commands", "default_settings_text"]

_PLATFORMS = ("slack", "telegram", "discord", "console")


def add_bindings_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bindings = subparsers.add_parser("bindings", help="routing and channel policy rules")
    sub = bindings.add_subparsers(dest="bindings_command", metavar="COMMAND", required=True)
    ex = sub.add_parser("explain", help="which rules apply to a conversation, and its settings")
    ex.add_argument("platform", choices=_PLATFORMS)
    ex.add_argument("workspace", help="Slack team, Discord guild or Telegram group id ('' in DMs)")
    ex.add_argument("channel", help="the channel or chat id")
    ex.add_argument("user", nargs="?", default="", help="the sender's id")
    ex.add_argument("--role", action="append", default=[], help="a Discord role id (repeatable)")
    ex.add_argument("--account", help="the linked account (default: looked up in the store)")
    ex.add_argument("--dm", action="store_true", help="a DM: the account is the user's link")
    ex.add_argument("--file", type=Path, help="a bindings file (default: SWITCHBOARD_BINDINGS)")
    ex.set_defaults(func=_explain)
    check = sub.add_parser("check", help="validate a bindings file; one line per problem")
    check.add_argument("file", type=Path, nargs="?", help="default: SWITCHBOARD_BINDINGS")
    check.set_defaults(func=_check)


def default_settings_text(settings: Settings) -> dict[str, str]:
    """What each setting is without a binding (today's behaviour)."""
    return {
        "agent": settings.agent,
        "assistant": settings.agent_assistant,
        "model": settings.model,
        "system_prompt": settings.system_prompt,
        "busy": settings.busy,
        "streaming": settings.streaming,
        "require_mention": "true",
        "allow_bots": "none",
        "sessions": "shared",
    }


def _load(settings: Settings, path: Path | None) -> Bindings:
    path = path or settings.bindings
    if path is None:
        return Bindings(source="(SWITCHBOARD_BINDINGS is not set)")
    return load_bindings(path)


def _check(args: argparse.Namespace) -> int:
    try:
        bindings = _load(load_settings(), args.file)
    except SwitchboardError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    print(f"{bindings.source}: {len(bindings.rules)} rules, valid")
    return 0


def _explain(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
        bindings = _load(settings, args.file)
        account = args.account
        if account is None and bindings.uses_account:
            account = asyncio.run(_linked_account(settings, args))
    except SwitchboardError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    subject = Subject(
        platform=args.platform,
        workspace=args.workspace,
        channel=args.channel,
        user=args.user,
        roles=tuple(args.role),
        account=account,
    )
    if bindings.uses_account:
        print(f"account: {account or '(not linked)'}")
    print(explain(bindings, subject, default_settings_text(settings)))
    return 0


async def _linked_account(settings: Settings, args: argparse.Namespace) -> str | None:
    from service.cli_redis import cli_redis
    from storage import Keys, LinkKind, Links

    async with cli_redis(settings) as client:
        links = Links(client, keys=Keys(settings.redis_prefix))
        if args.dm:
            link = await links.link_for(LinkKind.USER, args.platform, args.user)
        else:
            link = await links.link_for(
                LinkKind.SERVER, args.platform, args.workspace or args.channel
            )
    return link.account if link is not None else None
