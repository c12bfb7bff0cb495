"""One registry drives every surface: menus, `/help`, and the README's table."""

from __future__ import annotations

import re
from pathlib import Path

from channels.commands import (
    COMMANDS,
    HELP_TEXT,
    Audience,
    CommandName,
    Place,
    command_spec,
    commands_table,
    help_text,
    syntax_for,
)
from channels.message import Platform

README = Path(__file__).resolve().parents[3] / "README.md"
_TABLE = re.compile(r"<!-- commands:start -->\n(.*?)\n<!-- commands:end -->", re.DOTALL)


def test_readme_commands_table_is_the_registry() -> None:
    found = _TABLE.search(README.read_text(encoding="utf-8"))
    assert found is not None, "README.md lost its <!-- commands:start/end --> markers"
    assert found.group(1) == commands_table(), (
        "README's commands table differs from the registry; paste commands_table() between the "
        "markers"
    )


def test_every_command_fits_every_menu() -> None:
    for spec in COMMANDS:
        assert re.fullmatch(r"[a-z0-9_]{1,32}", spec.name)  # Telegram and Discord names
        assert 3 <= len(spec.description) <= 100  # Telegram 3-256, Discord 1-100


def test_help_lists_every_command_in_the_platforms_own_syntax() -> None:
    for spec in COMMANDS:
        assert f"{spec.usage()} — " in HELP_TEXT
    slack = help_text(syntax_for(Platform.SLACK, slack_command="/sb", prefix="!"))
    assert "/sb stop — " in slack and "!stop" in slack


def test_start_is_help_and_admin_commands_are_the_linking_ones() -> None:
    assert command_spec("start") is command_spec("help")
    assert {s.name for s in COMMANDS if s.audience is Audience.ADMINS} == {
        CommandName.LINK,
        CommandName.UNLINK,
    }


def test_commands_that_act_on_a_conversation_are_not_offered_outside_one() -> None:
    for name in (CommandName.NEW, CommandName.STOP):
        spec = command_spec(name)
        assert spec is not None and Place.GROUP not in spec.places and not spec.private
