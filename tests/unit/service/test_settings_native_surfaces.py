"""Settings of the platform-native surfaces: feedback on answers and Slack's suggested prompts."""

from __future__ import annotations

import pytest

from service.settings import Settings, load_settings
from switchboard.errors import ConfigError


def test_feedback_is_on_and_the_builtin_prompts_are_used_by_default() -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.feedback == "on"
    assert s.slack_prompt_pairs is None


def test_slack_prompts_are_read_as_title_and_message_pairs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = '[{"title": "Plan", "message": "Plan my week"}, {"title": "Fix", "message": "Fix it"}]'
    monkeypatch.setenv("SWITCHBOARD_SLACK_PROMPTS", raw)
    assert load_settings(_env_file=None).slack_prompt_pairs == (
        ("Plan", "Plan my week"),
        ("Fix", "Fix it"),
    )


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "{}",
        "[]",
        '[{"title": "a"}]',
        '[{"title": "", "message": "m"}]',
        "[" + ",".join(['{"title": "t", "message": "m"}'] * 5) + "]",
    ],
)
def test_a_bad_slack_prompts_value_stops_start_up_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("SWITCHBOARD_SLACK_PROMPTS", raw)
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None)
    assert "SWITCHBOARD_SLACK_PROMPTS" in str(info.value)
    assert len(str(info.value).splitlines()) == 1
