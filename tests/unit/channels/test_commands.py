"""Commands are recognised at position 0 or after a leading bot mention, nowhere else."""

from __future__ import annotations

import pytest

from channels.commands import CommandForm, CommandName, parse_command


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("/help", CommandName.HELP),
        ("/start", CommandName.HELP),
        ("/new", CommandName.NEW),
        ("  /STATUS  ", CommandName.STATUS),
        ("/stop now", CommandName.STOP),
        ("<@U123> /new", CommandName.NEW),
        ("@switchboard_bot /stop", CommandName.STOP),
        ("/link", CommandName.LINK),
        ("/unlink", CommandName.UNLINK),
        ("/whatever", CommandName.UNKNOWN),
    ],
)
def test_command_is_recognised(text: str, name: CommandName) -> None:
    command = parse_command(text)
    assert command is not None and command.name is name


@pytest.mark.parametrize(
    "text", ["hello /new", "please /stop", "", "/", "a/b", "// comment", "http://x/new"]
)
def test_ordinary_text_is_not_a_command(text: str) -> None:
    assert parse_command(text) is None


def test_command_addressed_to_another_bot_is_not_ours() -> None:
    assert parse_command("/new@OtherBot") is None
    assert parse_command("/new@OtherBot", bot_username="mybot") is None
    ours = parse_command("/new@MyBot", bot_username="mybot")
    assert ours is not None and ours.name is CommandName.NEW


def test_command_keeps_its_arguments() -> None:
    command = parse_command("/link   acme corp")
    assert command is not None and command.args == "acme corp"


@pytest.mark.parametrize(
    ("text", "name"),
    [("!stop", CommandName.STOP), ("<@U1> !new", CommandName.NEW), ("!USAGE", CommandName.USAGE)],
)
def test_prefix_form_is_a_command_for_registry_names(text: str, name: CommandName) -> None:
    command = parse_command(text)
    assert command is not None and command.name is name and command.form is CommandForm.PREFIX


@pytest.mark.parametrize("text", ["!important", "!!", "! stop", "!start", "!unknown thing"])
def test_prefix_form_of_anything_else_is_an_ordinary_message(text: str) -> None:
    assert parse_command(text) is None


def test_prefix_is_configurable() -> None:
    assert parse_command("!stop", prefix="%%") is None
    command = parse_command("%%stop", prefix="%%")
    assert command is not None and command.name is CommandName.STOP


def test_bare_name_is_a_command_only_when_the_bot_was_addressed_and_nothing_else_said() -> None:
    assert parse_command("stop") is None
    command = parse_command("Stop.", addressed=True)
    assert command is not None and command.name is CommandName.STOP
    assert command.form is CommandForm.BARE
    assert parse_command("help me write a poem", addressed=True) is None
    assert parse_command("frobnicate", addressed=True) is None
