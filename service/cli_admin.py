"""Operator commands: `switchboard accounts create|list|revoke`, `switchboard links list|confirm|delete`.

Each command opens Redis the way the service does (`REDIS_URL`, or the embedded store in
`SWITCHBOARD_DATA_DIR`: the one a running `serve`/`console` publishes there, else its own), does
one thing and exits. Bad settings or an unreachable store print one
line and exit 2; a refused request (unknown account, expired token, ...) prints one line and
exits 1. An API key is printed once, alone on stdout, so scripts can capture it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from service.cli_errors import run_command
from service.cli_feedback import add_feedback_commands
from service.cli_redis import cli_redis
from service.cli_usage import add_usage_commands
from service.settings import load_settings
from storage import (
    AccountError,
    Accounts,
    Keys,
    Link,
    LinkError,
    Links,
    is_wellformed_id,
)

__all__ = ["add_admin_commands"]


@dataclass(frozen=True, slots=True)
class _Stores:
    accounts: Accounts
    links: Links


_Handler = Callable[[argparse.Namespace, _Stores], Awaitable[int]]


def add_admin_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    accounts = subparsers.add_parser("accounts", help="manage Switchboard accounts and API keys")
    acc = accounts.add_subparsers(dest="accounts_command", metavar="COMMAND", required=True)
    create = acc.add_parser("create", help="create an account and print its API key once")
    create.add_argument("name")
    create.set_defaults(func=_command(_accounts_create))
    listing = acc.add_parser("list", help="list accounts")
    listing.set_defaults(func=_command(_accounts_list))
    revoke = acc.add_parser("revoke", help="revoke an account's API key (at once)")
    revoke.add_argument("name")
    revoke.set_defaults(func=_command(_accounts_revoke))

    links = subparsers.add_parser("links", help="list, confirm and delete workspace/DM links")
    lnk = links.add_subparsers(dest="links_command", metavar="COMMAND", required=True)
    listing = lnk.add_parser("list", help="list links (all, or one account's)")
    listing.add_argument("--account", help="only this account's links")
    listing.set_defaults(func=_command(_links_list))
    confirm = lnk.add_parser("confirm", help="confirm a /link token for an account")
    confirm.add_argument("token", help="the token, or the whole /link/<token> URL")
    confirm.add_argument("--account", required=True)
    confirm.set_defaults(func=_command(_links_confirm))
    delete = lnk.add_parser("delete", help="delete one of an account's links")
    delete.add_argument("link_id", metavar="ID")
    delete.add_argument("--account", required=True)
    delete.set_defaults(func=_command(_links_delete))

    add_usage_commands(subparsers)
    add_feedback_commands(subparsers)


def _command(handler: _Handler) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        return run_command(_with_stores(handler, args))

    return run


async def _with_stores(handler: _Handler, args: argparse.Namespace) -> int:
    settings = load_settings()
    async with cli_redis(settings) as client:
        keys = Keys(settings.redis_prefix)
        return await handler(args, _Stores(Accounts(client, keys=keys), Links(client, keys=keys)))


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=False)]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    return "\n".join(lines)


# -- accounts ---------------------------------------------------------------------------------


async def _accounts_create(args: argparse.Namespace, stores: _Stores) -> int:
    key = await stores.accounts.create(args.name)
    print(
        f"Created account {args.name}. Its API key is below; it is shown only this once.",
        file=sys.stderr,
    )
    print(key)
    return 0


async def _accounts_list(args: argparse.Namespace, stores: _Stores) -> int:
    rows = [
        (a.name, "active" if a.active else "revoked", _when(a.created_at))
        for a in await stores.accounts.list()
    ]
    if not rows:
        print("No accounts yet. Create one with: switchboard accounts create NAME")
        return 0
    print(_table(("NAME", "STATUS", "CREATED"), rows))
    return 0


async def _accounts_revoke(args: argparse.Namespace, stores: _Stores) -> int:
    await stores.accounts.revoke(args.name)
    print(f"Revoked account {args.name}; its API key no longer works.")
    return 0


# -- links ----------------------------------------------------------------------------------


def _link_row(link: Link) -> tuple[str, ...]:
    return (
        link.id,
        link.account,
        str(link.kind),
        link.platform,
        link.target_name or link.target_id,
        link.owner_name or link.owner_id,
        _when(link.created_at),
    )


async def _links_list(args: argparse.Namespace, stores: _Stores) -> int:
    links = await stores.links.list(args.account)
    if not links:
        print("No links.")
        return 0
    header = ("ID", "ACCOUNT", "KIND", "PLATFORM", "TARGET", "LINKED BY", "CREATED")
    print(_table(header, [_link_row(link) for link in links]))
    return 0


async def _active_account(stores: _Stores, name: str) -> None:
    account = await stores.accounts.get(name)
    if account is None:
        raise AccountError(f"no account named {name!r}")
    if not account.active:
        raise AccountError(f"account {name!r} is revoked")


async def _links_confirm(args: argparse.Namespace, stores: _Stores) -> int:
    token = args.token.rstrip("/").rsplit("/", 1)[-1]
    if not is_wellformed_id(token):
        raise LinkError("malformed token: expected 1-64 characters of A-Z, a-z, 0-9, '_' or '-'")
    await _active_account(stores, args.account)
    link = await stores.links.confirm(token, args.account)
    print(
        f"Linked {link.target_name or link.target_id} ({link.kind} link, {link.platform}) "
        f"to account {link.account}; link id {link.id}."
    )
    return 0


async def _links_delete(args: argparse.Namespace, stores: _Stores) -> int:
    link = await stores.links.delete(args.account, args.link_id)
    print(f"Deleted link {link.id} ({link.target_name or link.target_id}).")
    return 0
