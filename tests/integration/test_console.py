"""`switchboard console` driven through a pseudo-terminal, as a person would use it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect

SWITCHBOARD = str(Path(sys.executable).parent / "switchboard")


def spawn(redis_url: str, prefix: str, data_dir: Path) -> pexpect.spawn:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "SWITCHBOARD_REDIS_PREFIX": prefix,
        "SWITCHBOARD_DATA_DIR": str(data_dir),
        "SWITCHBOARD_MODEL": "demo",
        "SWITCHBOARD_ACCESS": "linked",
        "TERM": "dumb",
    }
    for name in ("TELEGRAM_BOT_TOKEN", "SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN"):
        env.pop(name, None)
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
    child.sendeof()
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
