"""Admin-surface settings (issues 32 and 35): a guessable admin key stops start-up, commands and
variables over HTTP are off by default, and the admin read of settings masks every secret."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from service import cli
from service.settings import Settings, load_settings
from switchboard.errors import ConfigError


def test_a_short_admin_key_stops_start_up_with_one_line_naming_the_variable() -> None:
    key = "x" * 23
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None, SWITCHBOARD_ADMIN_KEY=key)
    message = str(caught.value)
    assert message.startswith("invalid setting SWITCHBOARD_ADMIN_KEY:")
    assert "24 characters" in message
    assert key not in message and "\n" not in message


def test_serve_refuses_a_short_admin_key_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.setenv("SWITCHBOARD_ADMIN_KEY", "short-admin-key")
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("switchboard: invalid setting SWITCHBOARD_ADMIN_KEY")
    assert "short-admin-key" not in err[0]


@pytest.mark.parametrize(
    "key",
    [
        "k" * 24,
        "abcdefabcdefabcdefabcdef",
        "password1234password1234",
        "aaaaaaaaaaaaaaaaaabcdefgh",
    ],
    ids=["one character", "six repeated", "a phrase twice", "one character dominating"],
)
def test_a_long_but_predictable_admin_key_stops_start_up_without_echoing_it(key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None, SWITCHBOARD_ADMIN_KEY=key)
    message = str(caught.value)
    assert message.startswith("invalid setting SWITCHBOARD_ADMIN_KEY:")
    assert "too predictable" in message and "openssl rand" in message
    assert key not in message and key[:8] not in message and "\n" not in message


def test_random_keys_of_the_shortest_length_are_accepted() -> None:
    for _ in range(200):
        key = secrets.token_hex(12)  # `openssl rand -hex 12`: 24 hex digits
        assert load_settings(_env_file=None, SWITCHBOARD_ADMIN_KEY=key).admin_key is not None


def test_a_24_character_admin_key_is_accepted_and_an_empty_one_means_off() -> None:
    key = "3f9a1c07d2b84e6a95c0d7e1"
    settings = load_settings(_env_file=None, SWITCHBOARD_ADMIN_KEY=key)
    assert settings.admin_key is not None and settings.admin_key.get_secret_value() == key
    assert load_settings(_env_file=None, SWITCHBOARD_ADMIN_KEY="").admin_key is not None


def test_commands_and_variables_over_http_are_off_by_default() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.admin_allow_commands == "off"
    assert settings.mcp_allowed_var_names == frozenset()


def test_allowed_variables_are_a_comma_list_of_names() -> None:
    settings = load_settings(_env_file=None, SWITCHBOARD_MCP_ALLOWED_VARS=" TEAM_KEY, ,SEARCH_KEY ")
    assert settings.mcp_allowed_var_names == {"TEAM_KEY", "SEARCH_KEY"}


@pytest.mark.parametrize("value", ["TEAM-KEY", "1ABC", "A B", "$X"])
def test_an_allowed_variable_that_is_no_name_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^invalid setting SWITCHBOARD_MCP_ALLOWED_VARS:"):
        load_settings(_env_file=None, SWITCHBOARD_MCP_ALLOWED_VARS=value)


def test_the_public_view_masks_secret_shapes_in_any_setting() -> None:
    settings = load_settings(
        _env_file=None,
        SWITCHBOARD_SYSTEM_PROMPT="Call the API with Bearer sk-live0123456789abcdef please.",
        OPENAI_BASE_URL="https://proxy.example.com/u/aB3dE5gH7jK9mN1pQ3sT5vW7/v1",
        REDIS_URL="redis://default:hunter2@redis.internal:6379/0",
    )
    view = settings.public_view()
    assert "sk-live0123456789abcdef" not in str(view["SWITCHBOARD_SYSTEM_PROMPT"])
    assert view["OPENAI_BASE_URL"] == "https://proxy.example.com/u/***/v1"
    assert view["REDIS_URL"] == "redis://default:***@redis.internal:6379/0"
    assert view["SWITCHBOARD_MODEL"] == "demo" and view["SWITCHBOARD_HTTP_PORT"] == 8080


def test_trusted_proxies_are_a_comma_list_of_addresses_or_networks() -> None:
    assert Settings(_env_file=None).trusted_proxy_list == []  # type: ignore[call-arg]
    settings = load_settings(_env_file=None, SWITCHBOARD_TRUSTED_PROXIES=" 10.0.0.0/8, ,::1 ")
    assert settings.trusted_proxy_list == ["10.0.0.0/8", "::1"]
    with pytest.raises(ConfigError, match=r"^invalid setting SWITCHBOARD_TRUSTED_PROXIES:"):
        load_settings(_env_file=None, SWITCHBOARD_TRUSTED_PROXIES="proxy.internal")
