"""Settings: contract defaults, one-line errors naming the variable, secrets masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.settings import Settings, load_settings
from switchboard.errors import ConfigError

CONTRACT_VARS = [
    "REDIS_URL",
    "SWITCHBOARD_DATA_DIR",
    "SWITCHBOARD_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "SWITCHBOARD_HTTP_HOST",
    "SWITCHBOARD_HTTP_PORT",
    "SWITCHBOARD_PUBLIC_URL",
    "SWITCHBOARD_ACCESS",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_API_BASE",
    "TELEGRAM_MODE",
    "TELEGRAM_WEBHOOK_SECRET",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_API_BASE",
    "DISCORD_BOT_TOKEN",
    "DISCORD_API_BASE",
    "DISCORD_GATEWAY_URL",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = ["SWITCHBOARD_BUSY", "SWITCHBOARD_RATE_LIMIT", "SWITCHBOARD_CHECKPOINT_TTL_DAYS"]
    for name in [*CONTRACT_VARS, *extra]:
        monkeypatch.delenv(name, raising=False)


def test_defaults_match_the_contract() -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.redis_url is None
    assert s.data_dir == Path("./data")
    assert s.model == "demo"
    assert (s.http_host, s.http_port) == ("127.0.0.1", 8080)
    assert s.public_url == "http://127.0.0.1:8080"
    assert s.access == "linked"
    assert s.telegram_api_base == "https://api.telegram.org"
    assert s.telegram_mode == "polling"
    assert s.slack_api_base == "https://slack.com/api/"
    assert s.discord_api_base == "https://discord.com/api/v10"
    assert s.busy == "steer" and s.collect_ms == 1500 and s.rate_limit_per_minute == 20
    assert not s.any_platform


def test_every_contract_variable_is_a_setting() -> None:
    view = Settings(_env_file=None).public_view()  # type: ignore[call-arg]
    assert set(CONTRACT_VARS) <= set(view)


def test_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HTTP_PORT", "9001")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:abc")
    s = load_settings(_env_file=None)
    assert s.http_port == 9001 and s.telegram_enabled


def test_env_file_is_read_and_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / ".env"
    env.write_text("SWITCHBOARD_MODEL=openai:gpt-4o-mini\nSWITCHBOARD_HTTP_PORT=7000\n")
    monkeypatch.setenv("SWITCHBOARD_HTTP_PORT", "7001")
    s = load_settings(_env_file=env)
    assert s.model == "openai:gpt-4o-mini" and s.http_port == 7001


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SWITCHBOARD_HTTP_PORT", "eighty"),
        ("SWITCHBOARD_HTTP_PORT", "70000"),
        ("SWITCHBOARD_ACCESS", "everyone"),
        ("TELEGRAM_MODE", "push"),
        ("SWITCHBOARD_MODEL", "gpt4"),
        ("SWITCHBOARD_PUBLIC_URL", "example.com"),
    ],
)
def test_invalid_value_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None)
    message = str(info.value)
    assert name in message and "\n" not in message


def test_secrets_are_masked_in_the_public_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-very-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("REDIS_URL", "redis://user:hunter2@db:6379/0")
    view = load_settings(_env_file=None).public_view()
    assert view["SLACK_BOT_TOKEN"] == "***" and view["OPENAI_API_KEY"] == "***"
    assert "hunter2" not in str(view) and "very-secret" not in str(view)


def test_slack_with_a_transport_token_starts() -> None:
    socket = Settings(_env_file=None, slack_bot_token="xoxb-1", slack_app_token="xapp-1")  # type: ignore[call-arg]
    assert socket.slack_enabled


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, ["SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"]),
        ({"SLACK_APP_TOKEN": "xapp-1"}, ["SLACK_BOT_TOKEN"]),
        ({"SLACK_SIGNING_SECRET": "abc"}, ["SLACK_BOT_TOKEN"]),
        ({"TELEGRAM_BOT_TOKEN": "1:a", "TELEGRAM_MODE": "webhook"}, ["TELEGRAM_WEBHOOK_SECRET"]),
        (
            {
                "TELEGRAM_BOT_TOKEN": "1:a",
                "TELEGRAM_MODE": "webhook",
                "TELEGRAM_WEBHOOK_SECRET": "has spaces!",
            },
            ["TELEGRAM_WEBHOOK_SECRET"],
        ),
        ({"SWITCHBOARD_CHECKPOINT_TTL_DAYS": "7"}, ["SWITCHBOARD_THREAD_TTL_DAYS"]),
    ],
    ids=[
        "slack_bot_only",
        "slack_app_only",
        "slack_secret_only",
        "webhook_no_secret",
        "webhook_bad_secret",
        "checkpoints_shorter_than_threads",
    ],
)
def test_half_configured_channel_fails_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], named: list[str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None)
    message = str(info.value)
    assert all(n in message for n in named) and "\n" not in message
    assert "Value error" not in message
    for value in env.values():
        assert value in ("webhook", "7") or value not in message


def test_field_errors_read_without_pydantic_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_MODEL", "gpt4")
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None)
    assert str(info.value).startswith("invalid setting SWITCHBOARD_MODEL: must be 'demo'")


def test_checkpoints_expire_after_90_idle_days_by_default_and_0_keeps_them() -> None:
    assert Settings(_env_file=None).checkpoint_ttl_days == 90  # type: ignore[call-arg]
    keep = Settings(_env_file=None, checkpoint_ttl_days=0)  # type: ignore[call-arg]
    assert keep.checkpoint_ttl_days == 0


@pytest.mark.parametrize(
    ("name", "url", "secret"),
    [
        ("REDIS_URL", "redis://db:6379/0?password=hunter2", "hunter2"),
        ("REDIS_URL", "rediss://:hunter2@db:6380/0", "hunter2"),
        ("REDIS_URL", "redis://user:hunter2@db:6379/0", "hunter2"),
        ("OPENAI_BASE_URL", "https://bob:pa55word@llm.internal/v1", "pa55word"),
        ("OPENAI_BASE_URL", "https://llm.internal/v1?api-key=sk-in-query", "sk-in-query"),
        ("TELEGRAM_API_BASE", "https://tok3n@tg-proxy.internal", "tok3n"),
        ("SLACK_API_BASE", "https://proxy.internal/api/?token=xoxb-9", "xoxb-9"),
        ("DISCORD_API_BASE", "https://u:p4ss@proxy.internal/api/v10", "p4ss"),
        ("DISCORD_GATEWAY_URL", "wss://gw.internal/?auth=g4te", "g4te"),
    ],
)
def test_credentials_in_any_url_are_masked_in_the_public_view(
    monkeypatch: pytest.MonkeyPatch, name: str, url: str, secret: str
) -> None:
    monkeypatch.setenv(name, url)
    view = load_settings(_env_file=None).public_view()
    assert secret not in str(view)
    assert view[name].split("://")[0] == url.split("://")[0]  # type: ignore[union-attr]
    assert "***" in str(view[name])


def test_image_pixel_limit_defaults_to_40_mpx_and_refuses_more_than_pillow_decodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings(_env_file=None).max_image_pixels == 40_000_000  # type: ignore[call-arg]
    monkeypatch.setenv("SWITCHBOARD_MAX_IMAGE_PIXELS", "12000000")
    assert load_settings(_env_file=None).max_image_pixels == 12_000_000
    monkeypatch.setenv("SWITCHBOARD_MAX_IMAGE_PIXELS", "500000000")
    with pytest.raises(ConfigError, match=r"^invalid setting SWITCHBOARD_MAX_IMAGE_PIXELS: "):
        load_settings(_env_file=None)


def test_context_defaults_and_its_character_budget_takes_any_value_from_500(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.context_messages, settings.context_chars, settings.telegram_observe) == (
        20,
        8000,
        50,
    )
    monkeypatch.setenv("SWITCHBOARD_CONTEXT_CHARS", "500")
    monkeypatch.setenv("SWITCHBOARD_CONTEXT_MESSAGES", "0")
    monkeypatch.setenv("SWITCHBOARD_TELEGRAM_OBSERVE", "0")
    loaded = load_settings(_env_file=None)
    assert (loaded.context_chars, loaded.context_messages, loaded.telegram_observe) == (500, 0, 0)
    monkeypatch.setenv("SWITCHBOARD_CONTEXT_CHARS", "499")
    with pytest.raises(ConfigError, match=r"^invalid setting SWITCHBOARD_CONTEXT_CHARS: "):
        load_settings(_env_file=None)


def test_bounded_state_defaults_and_a_negative_keep_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.checkpoints_keep, settings.history_tokens, settings.summary_model) == (
        0,
        24_000,
        "",
    )
    monkeypatch.setenv("SWITCHBOARD_HISTORY_TOKENS", "0")
    monkeypatch.setenv("SWITCHBOARD_CHECKPOINTS_KEEP", "3")
    monkeypatch.setenv("SWITCHBOARD_SUMMARY_MODEL", "openai:gpt-4o-mini")
    loaded = load_settings(_env_file=None)
    assert (loaded.history_tokens, loaded.checkpoints_keep) == (0, 3)
    assert loaded.summary_model == "openai:gpt-4o-mini"
    monkeypatch.setenv("SWITCHBOARD_CHECKPOINTS_KEEP", "-1")
    with pytest.raises(ConfigError, match=r"^invalid setting SWITCHBOARD_CHECKPOINTS_KEEP: "):
        load_settings(_env_file=None)
