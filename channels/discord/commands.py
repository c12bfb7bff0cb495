"""Discord application commands from the command registry, through discord.py's `app_commands`.

- `build_tree(client, handler, guilds=..., on_error=...)`: a `CommandTree` with one slash command
  per registry entry, usable in servers and in DMs with the bot; `on_error` is its error hook. Admin commands (`/link`, `/unlink`) carry
  `default_member_permissions` = Manage Server, so Discord offers them only to members who have
  it (a server can override that; the manager checks the member's permissions again on use).
  With `guilds`, the commands are also copied to those guilds, where registration is instant.
- `needs_sync(local, remote)`: whether what Discord holds differs from what we would register,
  so a restart (or several ingress processes) costs one GET and no bulk overwrite; the sync
  itself is `CommandTree.sync`.

The tree's callbacks only hand the interaction to `handler`; the message is built from the payload
rebuilt from its public attributes (`client.interaction_payload`, then `events.command_to_inbound`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

import discord
from discord import app_commands

from channels.commands import COMMANDS, Audience, CommandSpec

__all__ = [
    "CONTEXTS",
    "INSTALLS",
    "CommandHandler",
    "ErrorHandler",
    "build_tree",
    "local_commands",
    "needs_sync",
    "signature",
]

CommandHandler = Callable[[discord.Interaction, CommandSpec], Awaitable[None]]
ErrorHandler = Callable[
    [discord.Interaction, app_commands.AppCommandError], Coroutine[Any, Any, None]
]

CONTEXTS = app_commands.AppCommandContext(guild=True, dm_channel=True, private_channel=False)
INSTALLS = app_commands.AppInstallationType(guild=True, user=False)
_ADMIN = discord.Permissions(manage_guild=True)


def _command(spec: CommandSpec, handler: CommandHandler) -> app_commands.Command[Any, ..., None]:
    callback: Any
    if spec.args and spec.args[0].required:  # at most one free-text argument (the registry's)

        async def callback(interaction: discord.Interaction, value: str) -> None:
            await handler(interaction, spec)

    elif spec.args:

        async def callback(interaction: discord.Interaction, value: str | None = None) -> None:
            await handler(interaction, spec)

    else:

        async def callback(interaction: discord.Interaction) -> None:
            await handler(interaction, spec)

    if spec.args:
        arg = spec.args[0]
        callback = app_commands.rename(value=arg.name)(
            app_commands.describe(value=arg.description)(callback)
        )
    command: app_commands.Command[Any, ..., None] = app_commands.Command(
        name=str(spec.name), description=spec.description, callback=callback
    )
    if spec.audience is Audience.ADMINS:
        command.default_permissions = _ADMIN
    return command


def build_tree(
    client: discord.Client,
    handler: CommandHandler,
    *,
    guilds: Sequence[int] = (),
    on_error: ErrorHandler | None = None,
) -> app_commands.CommandTree[Any]:
    """The client's command tree (one per client: each shard's client dispatches its own).
    `on_error` replaces the tree's default error hook, which logs a traceback and leaves the
    interaction unanswered (a command Discord still lists but we no longer have, say)."""
    tree: app_commands.CommandTree[Any] = app_commands.CommandTree(
        client, allowed_contexts=CONTEXTS, allowed_installs=INSTALLS
    )
    if on_error is not None:
        tree.error(on_error)
    for spec in COMMANDS:
        tree.add_command(_command(spec, handler))
    for guild in guilds:
        tree.copy_global_to(guild=discord.Object(guild))
    return tree


def local_commands(
    tree: app_commands.CommandTree[Any], guild: discord.abc.Snowflake | None
) -> list[dict[str, Any]]:
    """What `tree.sync(guild=guild)` would send, as Discord's JSON."""
    return [command.to_dict(tree) for command in tree.get_commands(guild=guild)]


Signature = tuple[Any, ...]


def signature(data: Mapping[str, Any]) -> Signature:
    """A command as Discord keeps it, without ids, versions and defaults it fills in."""
    permissions = data.get("default_member_permissions")
    options = tuple(
        (
            str(o.get("name")),
            str(o.get("description")),
            int(o.get("type") or 3),
            bool(o.get("required", False)),
        )
        for o in data.get("options") or ()
    )
    return (
        str(data.get("name")),
        str(data.get("description")),
        int(data.get("type") or 1),
        None if permissions is None else int(permissions),
        tuple(sorted(data.get("contexts") or ())) or None,
        tuple(sorted(data.get("integration_types") or ())) or None,
        bool(data.get("nsfw", False)),
        options,
    )


def needs_sync(local: Sequence[Mapping[str, Any]], remote: Sequence[Mapping[str, Any]]) -> bool:
    """Whether Discord's commands (its JSON, as `GET …/commands` returns it) differ from ours,
    order aside. Raw JSON, since discord.py's `AppCommand` reads `contexts` off by one."""
    ours = sorted(map(signature, local), key=lambda sig: sig[0])
    theirs = sorted(map(signature, remote), key=lambda sig: sig[0])
    return ours != theirs
