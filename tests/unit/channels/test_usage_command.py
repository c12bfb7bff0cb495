"""`/usage` is a command like the others, and `/help` lists it."""

from __future__ import annotations

from channels.commands import HELP_TEXT, CommandName, parse_command


def test_usage_is_recognised() -> None:
    for text in ("/usage", "  /USAGE ", "<@U1> /usage"):
        command = parse_command(text)
        assert command is not None and command.name is CommandName.USAGE


def test_help_lists_usage() -> None:
    assert "/usage" in HELP_TEXT
