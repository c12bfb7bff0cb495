"""SWITCHBOARD_AGENT values: what each selects, and that a bad one stops start-up in one line."""

from __future__ import annotations

import pytest

from agent import AgentSpec, parse_agent_spec
from service.settings import load_settings
from switchboard.errors import ConfigError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("builtin", AgentSpec("builtin")),
        ("", AgentSpec("builtin")),
        ("python:examples.echo_graph:graph", AgentSpec("python", "examples.echo_graph:graph")),
        ("http://127.0.0.1:2024", AgentSpec("remote", "http://127.0.0.1:2024")),
        ("https://agents.example.com/", AgentSpec("remote", "https://agents.example.com")),
    ],
)
def test_each_value_selects_its_backend(value: str, expected: AgentSpec) -> None:
    assert parse_agent_spec(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "gpt-4o",
        "python:",
        "python:pkg.module",
        "python:pkg mod:attr",
        "http://",
        "ftp://x",
        "remote",
    ],
)
def test_a_bad_value_is_one_line_naming_the_setting(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_agent_spec(value)
    message = str(caught.value)
    assert "SWITCHBOARD_AGENT" in message and "\n" not in message


@pytest.mark.parametrize("value", ["gpt-4o", "python:pkg.module", "http://"])
def test_settings_refuse_a_bad_value_naming_the_setting(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^invalid setting SWITCHBOARD_AGENT: "):
        load_settings(_env_file=None, agent=value)


def test_a_server_url_is_described_without_its_credentials() -> None:
    spec = parse_agent_spec("https://user:s3cret@agents.example.com:8443/x?key=abc")
    assert spec.describe() == "remote https://agents.example.com:8443"
    assert "s3cret" not in spec.describe() and "abc" not in spec.describe()
