"""The operator's side of bindings: a bad file stops `serve` with one line per problem and the
rule's position; `switchboard bindings explain` says which rules apply and why, looking the
linked account up in the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from service import cli
from storage import Accounts, Keys, LinkKind, Links

RULES = """\
- platform: slack
  channel: C0123ABCD
  model: openai:gpt-4o-mini
- account: acme
  agent: https://agents.acme.example
  assistant: support
"""


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path / "data"))
    for name in ("SLACK_BOT_TOKEN", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_serve_refuses_a_bad_bindings_file_naming_each_rule(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = env / "bindings.yaml"
    bad.write_text("- platform: slack\n  model: openai:m\n- chanel: C1\n  model: x\n")
    monkeypatch.setenv("SWITCHBOARD_BINDINGS", str(bad))
    monkeypatch.delenv("REDIS_URL", raising=False)  # the file is refused before any store
    monkeypatch.delenv("SWITCHBOARD_REDIS_CLUSTER", raising=False)  # (CI's cluster pass sets it)
    assert cli.main(["serve"]) == 2
    lines = capsys.readouterr().err.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("switchboard:"))
    err = lines[start : start + 4]
    assert err[0] == f"switchboard: invalid SWITCHBOARD_BINDINGS {bad}:"
    assert err[1].startswith("  rule 2 (line 3): unknown key 'chanel'")
    assert (
        err[2]
        == "  rule 2 (line 3): model must be 'demo' or 'provider:model', e.g. openai:gpt-4o-mini"
    )
    assert len(err) == 3 and not any("Traceback" in line for line in lines)


async def test_explain_looks_up_the_linked_account_and_names_each_settings_rule(
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    redis: aioredis.Redis,
    prefix: str,
    redis_url: str,
) -> None:
    path = env / "bindings.yaml"
    path.write_text(RULES)
    keys = Keys(prefix)
    await Accounts(redis, keys=keys).create("acme")
    links = Links(redis, keys=keys)
    token = await links.create_token(
        LinkKind.SERVER,
        platform="slack",
        target_id="T1",
        target_name="T1 team",
        user_id="owner",
        user_name="Owner",
    )
    await links.confirm(token.token, "acme")
    monkeypatch.setenv("SWITCHBOARD_BINDINGS", str(path))
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("SWITCHBOARD_REDIS_PREFIX", prefix)
    code = await asyncio.to_thread(cli.main, ["bindings", "explain", "slack", "T1", "C0123ABCD"])
    out = capsys.readouterr().out
    assert code == 0
    assert "account: acme" in out
    assert "  rule 1 (line 1): platform=slack, channel=C0123ABCD" in out
    assert "  model: openai:gpt-4o-mini  (rule 1)" in out
    assert "  agent: https://agents.acme.example  (rule 2)" in out
    assert "  busy: steer  (default)" in out
    code = await asyncio.to_thread(cli.main, ["bindings", "explain", "slack", "T9", "C9"])
    out = capsys.readouterr().out
    assert "account: (not linked)" in out and "no rule matches" in out
