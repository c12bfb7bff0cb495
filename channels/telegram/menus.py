"""Telegram's command menu (the "/" button by the input field), built from the command registry.

Three scopes; Telegram shows a chat the narrowest one that applies to it:

| scope                      | commands                                              |
|----------------------------|-------------------------------------------------------|
| all private chats          | every command (`/link` there links your own DMs)      |
| all group chats            | those anyone may use in a group                       |
| all chat administrators    | those, plus the admin ones (`/link`, `/unlink`)       |

`sync_menus` reads each scope (`getMyCommands`) and sets it (`setMyCommands`) only when it differs,
so a restart, or a fleet of ingress processes starting together, costs one read per scope.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
from aiogram.methods import GetMyCommands, SetMyCommands
from aiogram.types import (
    BotCommand,
    BotCommandScopeAllChatAdministrators,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
)

from channels.commands import COMMANDS, Audience, CommandSpec, Place
from channels.telegram.calls import BotCalls

__all__ = ["Menu", "menus", "sync_menus"]

_log = structlog.get_logger(__name__)

Scope = (
    BotCommandScopeAllPrivateChats
    | BotCommandScopeAllGroupChats
    | (BotCommandScopeAllChatAdministrators)
)
Menu = tuple[Scope, tuple[BotCommand, ...]]


def _commands(specs: Sequence[CommandSpec]) -> tuple[BotCommand, ...]:
    return tuple(BotCommand(command=str(s.name), description=s.description) for s in specs)


def menus() -> tuple[Menu, ...]:
    """(scope, commands) for each of the three scopes, in the registry's order."""
    in_groups = [s for s in COMMANDS if s.places & {Place.GROUP, Place.THREAD}]
    return (
        (
            BotCommandScopeAllPrivateChats(),
            _commands([s for s in COMMANDS if Place.DM in s.places]),
        ),
        (
            BotCommandScopeAllGroupChats(),
            _commands([s for s in in_groups if s.audience is Audience.ANYONE]),
        ),
        (BotCommandScopeAllChatAdministrators(), _commands(in_groups)),
    )


def _pairs(commands: Sequence[BotCommand]) -> list[tuple[str, str]]:
    return [(c.command, c.description) for c in commands]


async def sync_menus(api: BotCalls) -> int:
    """Set every scope whose menu differs from ours; returns how many were set. Raises the
    SDK's errors (the caller translates them)."""
    changed = 0
    for scope, commands in menus():
        current = await api.call(GetMyCommands(scope=scope))
        if _pairs(current) == _pairs(commands):
            continue
        await api.call(SetMyCommands(commands=list(commands), scope=scope))
        changed += 1
        _log.info("telegram.menu_set", scope=scope.type, commands=len(commands))
    return changed
