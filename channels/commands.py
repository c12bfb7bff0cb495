"""Chat commands: one registry for every surface, and the parser for their text forms.

`COMMANDS` is the only list of commands. It drives Telegram's command menus, Discord's application
commands, the Slack slash command's sub-commands, `/help` and the README's commands table (a unit
test keeps that table equal to `commands_table()`).

Text forms, recognised by `parse_command` (pure; the manager executes):
- `/cmd args` at position 0, or right after a leading bot mention (`@bot /new`); `/cmd@OtherBot` is
  not ours (Telegram's addressing form; adapters pass `bot_username` when they know it);
- `!cmd args` (the prefix is `SWITCHBOARD_COMMAND_PREFIX`) for registry names only, so `!important`
  stays a message: Slack's clients take every `/word` and send no slash command from a thread;
- the bare name when the message was addressed to the bot and says nothing else (`@bot stop`).

Native commands (a Discord application command, a Slack slash command) reach the manager as
`/cmd args` text with `InboundMessage.native` set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from channels.message import Platform

__all__ = [
    "COMMANDS",
    "DEFAULT_PREFIX",
    "DEFAULT_SLACK_COMMAND",
    "HELP_TEXT",
    "Audience",
    "Command",
    "CommandArg",
    "CommandForm",
    "CommandName",
    "CommandSpec",
    "Place",
    "Syntax",
    "command_spec",
    "commands_table",
    "help_text",
    "parse_command",
    "syntax_for",
]

DEFAULT_PREFIX = "!"
DEFAULT_SLACK_COMMAND = "/switchboard"


class CommandName(StrEnum):
    HELP = "help"
    NEW = "new"
    STATUS = "status"
    STOP = "stop"
    QUEUE = "queue"
    USAGE = "usage"
    LINK = "link"
    UNLINK = "unlink"
    START = "start"  # Telegram sends /start when a chat opens; treated as /help
    UNKNOWN = "unknown"


class Place(StrEnum):
    """Where a command is used."""

    DM = "dm"
    GROUP = "group"  # a channel or group, outside any conversation
    THREAD = "thread"  # a conversation in a channel: a thread, a reply chain, a forum topic


class Audience(StrEnum):
    ANYONE = "anyone"
    ADMINS = "admins"  # workspace, server or group admins; in a DM the person themselves


class CommandForm(StrEnum):
    SLASH = "slash"  # `/new`, also what a native command becomes
    PREFIX = "prefix"  # `!new`
    BARE = "bare"  # `@bot new`


@dataclass(frozen=True, slots=True)
class CommandArg:
    name: str
    description: str
    required: bool = False


_EVERYWHERE = frozenset(Place)
_CONVERSATIONS = frozenset({Place.DM, Place.THREAD})


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One command as every surface shows it. `description` fits every menu (Discord: 100
    characters); `private` answers go to the sender alone where the platform can (ephemeral)."""

    name: CommandName
    description: str
    args: tuple[CommandArg, ...] = ()
    audience: Audience = Audience.ANYONE
    private: bool = False
    places: frozenset[Place] = _EVERYWHERE

    def usage(self, syntax: Syntax | None = None) -> str:
        """How it is typed, e.g. `/link` or `/switchboard queue MODE`."""
        shown = (syntax or Syntax()).show(self.name)
        for arg in self.args:
            shown += f" {arg.name.upper()}" if arg.required else f" [{arg.name.upper()}]"
        return shown


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(CommandName.HELP, "What I can do, and these commands", private=True),
    CommandSpec(CommandName.NEW, "Start a fresh conversation here", places=_CONVERSATIONS),
    CommandSpec(CommandName.STATUS, "Show this conversation's state", private=True),
    CommandSpec(CommandName.STOP, "Cancel the answer in progress", places=_CONVERSATIONS),
    CommandSpec(
        CommandName.QUEUE,
        "What messages sent while I answer do here: steer, collect, interrupt, queue, reject",
        args=(CommandArg("mode", "steer, collect, interrupt, queue, reject or default"),),
        places=_CONVERSATIONS,
    ),
    CommandSpec(CommandName.USAGE, "How much of your usage limits you have used", private=True),
    CommandSpec(
        CommandName.LINK,
        "Link this workspace (admins) or your DMs to a Switchboard account",
        audience=Audience.ADMINS,
        private=True,
    ),
    CommandSpec(
        CommandName.UNLINK, "Remove a link you created", audience=Audience.ADMINS, private=True
    ),
)
_BY_NAME = {str(spec.name): spec for spec in COMMANDS}


def command_spec(name: str) -> CommandSpec | None:
    """The registry entry for a command name (`start` is `help`), or None."""
    return _BY_NAME.get("help" if name == CommandName.START else str(name))


@dataclass(frozen=True, slots=True)
class Syntax:
    """How commands are typed on one platform: `slash` precedes the name (`/` or
    `/switchboard `); `prefix` is the text form that works everywhere; `slash_in_threads` is
    False where the platform sends no slash command from a thread (Slack)."""

    slash: str = "/"
    prefix: str = DEFAULT_PREFIX
    slash_in_threads: bool = True

    def show(self, name: str) -> str:
        return f"{self.slash}{name}"


def syntax_for(
    platform: Platform, *, slack_command: str = DEFAULT_SLACK_COMMAND, prefix: str = DEFAULT_PREFIX
) -> Syntax:
    if platform is Platform.SLACK:
        return Syntax(slash=f"{slack_command} ", prefix=prefix, slash_in_threads=False)
    return Syntax(prefix=prefix)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def help_text(syntax: Syntax | None = None) -> str:
    """The `/help` answer, from the registry."""
    syntax = syntax or Syntax()
    lines = [
        "I'm Switchboard, an AI assistant. Just write to me; in channels, mention me to start a "
        "thread.",
        "",
        "Commands:",
    ]
    lines += [f"{spec.usage(syntax)} — {_lower_first(spec.description)}" for spec in COMMANDS]
    stop, new = f"{syntax.prefix}{CommandName.STOP}", f"{syntax.prefix}{CommandName.NEW}"
    if syntax.slash_in_threads:
        lines += ["", f"{stop}, {new}, … work too, and so does mentioning me: @bot stop."]
    else:
        lines += [
            "",
            f"Slack sends no slash commands from threads: inside a thread type {stop}, {new}, … "
            "or mention me: @bot stop.",
        ]
    return "\n".join(lines)


HELP_TEXT = help_text()


def commands_table(slack_command: str = DEFAULT_SLACK_COMMAND, prefix: str = DEFAULT_PREFIX) -> str:
    """The README's commands table (Markdown), from the registry."""
    slack = syntax_for(Platform.SLACK, slack_command=slack_command, prefix=prefix)
    rows = [
        "| Telegram, Discord | Slack | what it does | who | answer | where |",
        "|---|---|---|---|---|---|",
    ]
    for spec in COMMANDS:
        who = "admins; anyone in a DM" if spec.audience is Audience.ADMINS else "anyone"
        answer = "only to you" if spec.private else "in the conversation"
        where = ", ".join(_PLACE_NAMES[p] for p in Place if p in spec.places)
        rows.append(
            f"| `{spec.usage()}` | `{spec.usage(slack)}`, `{prefix}{spec.name}` "
            f"| {spec.description} | {who} | {answer} | {where} |"
        )
    return "\n".join(rows)


_PLACE_NAMES = {Place.DM: "DMs", Place.GROUP: "channels and groups", Place.THREAD: "threads"}


@dataclass(frozen=True, slots=True)
class Command:
    name: CommandName
    args: str = ""
    raw: str = ""
    form: CommandForm = CommandForm.SLASH


_LEADING_MENTION = re.compile(r"^\s*(?:<@!?[A-Za-z0-9]+>|@[A-Za-z0-9_]+)[:,]?\s+")
_COMMAND = re.compile(r"^/([A-Za-z_]+)(?:@([A-Za-z0-9_]+))?(?:\s+(.*))?$", re.DOTALL)
_WORD = re.compile(r"^([A-Za-z_]+)(?:\s+(.*))?$", re.DOTALL)


def parse_command(
    text: str,
    *,
    bot_username: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    addressed: bool = False,
) -> Command | None:
    """The command in `text`, or None when the text is an ordinary message. `addressed`: the
    message mentioned the bot (its mention already stripped), so a bare name is a command."""
    stripped = text.strip()
    if not stripped.startswith("/") and not (prefix and stripped.startswith(prefix)):
        stripped = _LEADING_MENTION.sub("", stripped, count=1)
    if prefix and stripped.startswith(prefix):
        return _known(stripped[len(prefix) :], stripped, CommandForm.PREFIX)
    match = _COMMAND.match(stripped)
    if match is None:
        if addressed and " " not in stripped:
            return _known(stripped.rstrip(".!?"), stripped, CommandForm.BARE)
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


def _known(body: str, raw: str, form: CommandForm) -> Command | None:
    """A registry command written without its slash, or None (then it is a message)."""
    match = _WORD.match(body)
    if match is None:
        return None
    spec = _BY_NAME.get(match.group(1).lower())
    if spec is None:
        return None
    return Command(name=spec.name, args=(match.group(2) or "").strip(), raw=raw, form=form)
