"""The operator CLI against the test Redis: as the installed `switchboard` script (a subprocess),
and, where only the command's behaviour matters, through the same argparse wiring in-process."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import sys
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from service.cli_admin import add_admin_commands
from storage import Accounts, Keys, LinkKind, Links, LinkToken

SCRIPT = Path(sys.prefix) / "bin" / "switchboard"


async def run_cli(
    *args: str, redis_url: str, prefix: str, cwd: Path, extra_env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "REDIS_URL": redis_url,
        "SWITCHBOARD_REDIS_CLUSTER": os.environ.get("SWITCHBOARD_REDIS_CLUSTER", "false"),
        "SWITCHBOARD_REDIS_PREFIX": prefix,
        "SWITCHBOARD_DATA_DIR": str(cwd / "data"),
        **(extra_env or {}),
    }
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        *args,
        cwd=cwd,  # no .env there
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, redis_url: str, prefix: str, tmp_path: Path) -> None:
    """Settings for in-process runs: the test Redis and prefix, no `.env` in the cwd."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("SWITCHBOARD_REDIS_PREFIX", prefix)


async def run_in_process(*args: str) -> tuple[int, str, str]:
    """Parse and dispatch exactly as `switchboard` does, in a thread (the command runs its own
    event loop)."""
    parser = argparse.ArgumentParser(prog="switchboard")
    add_admin_commands(parser.add_subparsers(dest="command"))
    parsed = parser.parse_args(args)
    out, err = io.StringIO(), io.StringIO()

    def call() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return int(parsed.func(parsed))

    code = await asyncio.to_thread(call)
    return code, out.getvalue(), err.getvalue()


async def test_accounts_create_prints_a_working_key_once(
    redis: aioredis.Redis, redis_url: str, prefix: str, keys: Keys, tmp_path: Path
) -> None:
    code, out, err = await run_cli(
        "accounts", "create", "acme", redis_url=redis_url, prefix=prefix, cwd=tmp_path
    )
    assert code == 0, err
    key = out.strip()
    assert key.startswith("sbk_") and "\n" not in key
    assert "shown only this once" in err
    account = await Accounts(redis, keys=keys).authenticate(key)
    assert account is not None and account.name == "acme"

    code, _, err = await run_cli(
        "accounts", "create", "acme", redis_url=redis_url, prefix=prefix, cwd=tmp_path
    )
    assert code == 1 and err.strip() == "switchboard: account 'acme' already exists"


@pytest.mark.usefixtures("cli_env")
async def test_accounts_list_and_revoke(redis: aioredis.Redis, keys: Keys) -> None:
    accounts = Accounts(redis, keys=keys)
    key = await accounts.create("acme")
    await accounts.create("beta")
    code, out, _ = await run_in_process("accounts", "revoke", "acme")
    assert code == 0 and "no longer works" in out
    assert await accounts.authenticate(key) is None
    code, out, _ = await run_in_process("accounts", "list")
    assert code == 0
    rows = [line.split() for line in out.strip().splitlines()]
    assert rows[0][:2] == ["NAME", "STATUS"]
    assert [r[:2] for r in rows[1:]] == [["acme", "revoked"], ["beta", "active"]]
    code, _, err = await run_in_process("accounts", "revoke", "ghost")
    assert code == 1 and err.strip() == "switchboard: no account named 'ghost'"


async def test_links_confirm_by_url_as_the_installed_script(
    redis: aioredis.Redis, redis_url: str, prefix: str, keys: Keys, tmp_path: Path
) -> None:
    await Accounts(redis, keys=keys).create("acme")
    links = Links(redis, keys=keys)
    token = await server_token(links)
    url = f"http://127.0.0.1:8080/link/{token.token}"
    code, out, err = await run_cli(
        "links",
        "confirm",
        url,
        "--account",
        "acme",
        redis_url=redis_url,
        prefix=prefix,
        cwd=tmp_path,
    )
    assert code == 0, err
    assert "Linked Discord server G1" in out
    assert await links.is_workspace_linked("discord", "G1")


@pytest.mark.usefixtures("cli_env")
async def test_links_list_and_delete(redis: aioredis.Redis, keys: Keys) -> None:
    links = Links(redis, keys=keys)
    link = await links.confirm((await server_token(links)).token, "acme")
    code, out, _ = await run_in_process("links", "list", "--account", "acme")
    assert code == 0 and link.id in out and "Discord server G1" in out
    code, out, _ = await run_in_process("links", "list")
    assert code == 0 and link.id in out
    code, out, _ = await run_in_process("links", "list", "--account", "other")
    assert code == 0 and out.strip() == "No links."

    code, _, err = await run_in_process("links", "delete", link.id, "--account", "other")
    assert code == 1 and err.strip() == "switchboard: unknown link"
    code, out, _ = await run_in_process("links", "delete", link.id, "--account", "acme")
    assert code == 0 and link.id in out
    assert not await links.is_workspace_linked("discord", "G1")


@pytest.mark.usefixtures("cli_env")
async def test_links_confirm_refuses_unknown_account_bad_and_used_tokens(
    redis: aioredis.Redis, keys: Keys
) -> None:
    await Accounts(redis, keys=keys).create("acme")
    links = Links(redis, keys=keys)
    token = await server_token(links)
    code, _, err = await run_in_process("links", "confirm", token.token, "--account", "ghost")
    assert code == 1 and "no account named 'ghost'" in err
    code, _, err = await run_in_process("links", "confirm", "bad.token", "--account", "acme")
    assert code == 1 and "malformed token" in err
    await links.confirm(token.token, "acme")
    code, _, err = await run_in_process("links", "confirm", token.token, "--account", "acme")
    assert code == 1 and "already linked to your account" in err


async def test_unreachable_redis_is_one_line_and_exit_2(prefix: str, tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "accounts", "list", redis_url="redis://127.0.0.1:1/0", prefix=prefix, cwd=tmp_path
    )
    assert code == 2
    assert out == ""
    assert err.strip().startswith("switchboard: cannot reach Redis")
    assert len(err.strip().splitlines()) == 1


async def test_bad_setting_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, cli_env: None
) -> None:
    monkeypatch.setenv("SWITCHBOARD_ACCESS", "sometimes")
    code, _, err = await run_in_process("accounts", "list")
    assert code == 2
    assert err.strip().startswith("switchboard: invalid setting SWITCHBOARD_ACCESS")


async def server_token(links: Links) -> LinkToken:
    return await links.create_token(
        LinkKind.SERVER,
        platform="discord",
        target_id="G1",
        target_name="Discord server G1",
        user_id="U1",
        user_name="alice",
    )
