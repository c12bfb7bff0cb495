"""Chat commands: recognised at position 0, or right after a leading bot mention.

Parsing is pure; the manager executes. `/cmd@OtherBot` is not ours (Telegram's addressing form);
adapters pass `bot_username` when they know it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["HELP_TEXT", "Command", "CommandName", "parse_command"]


class CommandName(StrEnum):
    HELP = "help"
    NEW = "new"
    STATUS = "status"
    STOP = "stop"
    USAGE = "usage"
    LINK = "link"
    UNLINK = "unlink"
    START = "start"  # Telegram sends /start when a chat opens; treated as /help
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Command:
    name: CommandName
    args: str = ""
    raw: str = ""


HELP_TEXT = (
    "I'm Switchboard, an AI assistant. Just write to me; in channels, mention me to start a "
    "thread.\n\n"
    "Commands:\n"
    "/new — start a fresh conversation here\n"
    "/status — show this conversation's state\n"
    "/stop — cancel the answer in progress\n"
    "/usage — how much of your usage limits you have used\n"
    "/link — link this workspace (admins) or your DMs to a Switchboard account\n"
    "/unlink — remove a link you created\n"
    "/help — this text"
)

_LEADING_MENTION = re.compile(r"^\s*(?:<@!?[A-Za-z0-9]+>|@[A-Za-z0-9_]+)[:,]?\s+")
_COMMAND = re.compile(r"^/([A-Za-z_]+)(?:@([A-Za-z0-9_]+))?(?:\s+(.*))?$", re.DOTALL)


def parse_command(text: str, *, bot_username: str | None = None) -> Command | None:
    """The command in `text`, or None when the text is an ordinary message."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        stripped = _LEADING_MENTION.sub("", stripped, count=1)
    match = _COMMAND.match(stripped)
    if match is None:
        return None
    word, addressee, args = match.group(1).lower(), match.group(2), (match.group(3) or "").strip()
    if addressee and (bot_username is None or addressee.lower() != bot_username.lower()):
        return None
    try:
        name = CommandName(word)
    except ValueError:
        name = CommandName.UNKNOWN
    if name is CommandName.START:
        name = CommandName.HELP
    return Command(name=name, args=args, raw=stripped)
