"""`switchboard slack manifest` prints YAML that parses, from the settings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from channels.slack.manifest import BOT_SCOPES
from service.cli import main


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    for name in ("SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path / "data"))


def test_manifest_is_yaml_with_every_scope_and_the_configured_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_SLACK_COMMAND", "assistant")
    assert main(["slack", "manifest"]) == 0
    manifest = yaml.safe_load(capsys.readouterr().out)
    assert manifest["features"]["slash_commands"][0]["command"] == "/assistant"
    assert manifest["oauth_config"]["scopes"]["bot"] == list(BOT_SCOPES)
    assert manifest["settings"]["socket_mode_enabled"] is True


def test_a_signing_secret_alone_makes_an_events_api_manifest_at_the_public_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s3cret")
    monkeypatch.setenv("SWITCHBOARD_PUBLIC_URL", "https://bot.example.com")
    assert main(["slack", "manifest"]) == 0
    out = capsys.readouterr()
    manifest = yaml.safe_load(out.out)
    assert manifest["settings"]["event_subscriptions"]["request_url"] == (
        "https://bot.example.com/slack/events"
    )
    assert "s3cret" not in out.out and "xoxb-1" not in out.out and out.err == ""


def test_an_events_api_manifest_for_a_private_url_warns_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["slack", "manifest", "--events-api"]) == 0
    out = capsys.readouterr()
    assert "https://" in out.err
    assert yaml.safe_load(out.out)["settings"]["socket_mode_enabled"] is False
