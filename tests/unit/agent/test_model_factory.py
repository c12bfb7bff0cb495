"""The model factory: demo, OpenAI-compatible and Anthropic models, one clear error otherwise."""

from __future__ import annotations

import pytest

from agent.demo import DemoChatModel
from agent.model import build_model, split_spec
from switchboard.errors import ConfigError

NO_KEYS = {"openai_base_url": None, "openai_api_key": None, "anthropic_api_key": None}


def test_demo_spec_builds_the_scripted_model() -> None:
    assert isinstance(build_model("demo", **NO_KEYS), DemoChatModel)
    assert isinstance(build_model(" Demo ", **NO_KEYS), DemoChatModel)


def test_openai_model_honours_base_url_and_key() -> None:
    from langchain_openai import ChatOpenAI

    model = build_model(
        "openai:llama3.2:3b",
        openai_base_url="http://127.0.0.1:11434/v1",
        openai_api_key="sk-test-123",
        anthropic_api_key=None,
    )
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "llama3.2:3b"
    assert model.openai_api_base == "http://127.0.0.1:11434/v1"
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "sk-test-123"


def test_openai_without_key_is_one_clear_error() -> None:
    with pytest.raises(ConfigError) as caught:
        build_model("openai:gpt-4o-mini", **NO_KEYS)
    message = str(caught.value)
    assert "OPENAI_API_KEY" in message and "\n" not in message


def test_openai_compatible_server_needs_no_key() -> None:
    from langchain_openai import ChatOpenAI

    model = build_model(
        "openai:llama3.2",
        openai_base_url="http://127.0.0.1:11434/v1",
        openai_api_key=None,
        anthropic_api_key=None,
    )
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base == "http://127.0.0.1:11434/v1"


def test_anthropic_takes_its_key() -> None:
    from langchain_anthropic import ChatAnthropic

    model = build_model(
        "anthropic:claude-sonnet-4-5",
        openai_base_url=None,
        openai_api_key=None,
        anthropic_api_key="sk-ant-test",
    )
    assert isinstance(model, ChatAnthropic)


def test_anthropic_without_key_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        build_model("anthropic:claude-sonnet-4-5", **NO_KEYS)


def test_missing_provider_package_is_one_clear_error() -> None:
    with pytest.raises(ConfigError) as caught:
        build_model("groq:llama-3.1-8b-instant", **NO_KEYS)
    assert "not installed" in str(caught.value)
    assert "pip install langchain-groq" in str(caught.value)


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        build_model("no_such_provider:model", **NO_KEYS)


def test_key_is_never_echoed_in_errors() -> None:
    secret = "sk-never-show-this-0123456789"
    with pytest.raises(ConfigError) as caught:
        build_model(
            "no_such_provider:model",
            openai_base_url=None,
            openai_api_key=secret,
            anthropic_api_key=secret,
        )
    assert secret not in str(caught.value)


@pytest.mark.parametrize("spec", ["gpt-4o", ":model", "openai:", ""])
def test_malformed_spec_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError):
        split_spec(spec)


def test_model_part_may_contain_colons() -> None:
    assert split_spec("openai:qwen2.5:7b") == ("openai", "qwen2.5:7b")
