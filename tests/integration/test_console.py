"""`switchboard console` driven through a pseudo-terminal, as a person would use it."""

from __future__ import annotations

import os
import sys
import termios
import time
from pathlib import Path

import pexpect

SWITCHBOARD = str(Path(sys.executable).parent / "switchboard")


def in_raw_mode(child: pexpect.spawn, timeout: float = 10.0) -> None:
    """Wait until the prompt reads keys itself: prompt_toolkit may print "you> " a moment
    before it switches the tty to raw mode, and a Ctrl-D typed in between is the tty's."""
    deadline = time.monotonic() + timeout
    while termios.tcgetattr(child.child_fd)[3] & termios.ICANON:
        assert time.monotonic() < deadline, "the prompt never took the terminal"
        time.sleep(0.01)


def spawn(redis_url: str | None, prefix: str, data_dir: Path) -> pexpect.spawn:
    """The console on a pseudo-terminal; `redis_url=None` runs it on the embedded store."""
    env = {
        **os.environ,
        "REDIS_URL": redis_url or "",
        "SWITCHBOARD_REDIS_PREFIX": prefix,
        "SWITCHBOARD_DATA_DIR": str(data_dir),
        "SWITCHBOARD_MODEL": "demo",
        "SWITCHBOARD_ACCESS": "linked",
        "TERM": "dumb",
    }
    for name in ("TELEGRAM_BOT_TOKEN", "SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN"):
        env.pop(name, None)
    if redis_url is None:
        env.pop("REDIS_URL")
    child = pexpect.spawn(
        SWITCHBOARD, ["console"], env=env, encoding="utf-8", timeout=30, cwd=str(data_dir)
    )
    child.expect("you> ")
    return child


def test_console_conversation_with_clarification(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    child = spawn(redis_url, prefix, tmp_path)
    try:
        child.sendline("hello")
        child.expect("Hello! I'm Switchboard's demo agent")
        child.expect("you> ")
        child.sendline("choose a colour")
        child.expect("Which one do you mean")
        child.expect(r"2\. beta")
        child.expect("you> ")
        child.sendline("2")
        child.expect(r"You chose: beta\.")
        child.expect("you> ")
        child.sendline("/status")
        child.expect("Busy: no")
        child.expect("you> ")
        child.sendline("recall")
        child.expect("You first said: hello")
        child.expect("you> ")
        child.sendline("/new")
        child.expect("new conversation")
        child.expect("you> ")
        child.sendline("/quit")
        child.expect("bye")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before


def test_console_conversation_survives_a_restart(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    child = spawn(redis_url, prefix, tmp_path)
    child.sendline("remember the lighthouse")
    child.expect("You said: remember the lighthouse")
    child.expect("you> ")
    in_raw_mode(child)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    again = spawn(redis_url, prefix, tmp_path)
    try:
        again.sendline("recall")
        again.expect("You first said: remember the lighthouse")
        again.expect("you> ")
        again.sendline("/quit")
        again.expect(pexpect.EOF)
    finally:
        again.close(force=True)


def test_ctrl_c_stops_the_answer_in_progress_and_ctrl_c_at_the_prompt_leaves(
    tmp_path: Path,
) -> None:
    child = spawn(None, "sb:", tmp_path)  # the embedded store: Ctrl-C must not reach it
    try:
        child.sendline("slow 30")
        child.expect("thinking")
        child.sendcontrol("c")
        child.expect("stopping")
        child.expect("Stopped")
        child.expect("you> ", timeout=10)
        child.sendline("hello")
        child.expect("Hello! I'm Switchboard's demo agent")
        child.expect("you> ")
        child.sendcontrol("c")
        child.expect("bye", timeout=5)
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before


def test_line_editing_long_lines_help_and_the_log_path(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    child = spawn(redis_url, prefix, tmp_path)
    try:
        assert str(tmp_path / "console.log") in child.before
        in_raw_mode(child)
        child.send("echo ac")
        child.send("\x1b[D")  # cursor left
        child.send("b\r")
        child.expect("bot> abc\r")
        child.expect("you> ")
        long_line = "y" * 5000  # past the tty's 4095-character line buffer
        child.sendline(f"echo {long_line}")
        child.expect_exact(f"bot> {long_line}\r")
        child.expect("you> ")
        child.sendline("/help")
        child.expect("/quit")
        child.expect("you> ")
        in_raw_mode(child)
        child.sendcontrol("d")  # Ctrl-D: the prompt's raw mode has no tty EOF character
        child.expect("bye")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
