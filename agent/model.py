"""The model factory: `demo` or a `provider:model` string, checked once at start-up.

`openai:*` honours the base URL and key, so any OpenAI-compatible server works (Ollama, vLLM,
LM Studio; with a base URL the key is optional, as local servers take none); `anthropic:*` takes its key the same way. Every other provider goes to langchain's
`init_chat_model` as is and reads its own environment. A missing integration package or key
becomes one `ConfigError` line that names what to set, never the key itself.
"""

from __future__ import annotations

from typing import Any

import structlog
from langchain_core.language_models import BaseChatModel

from agent.demo import DemoChatModel
from switchboard.errors import ConfigError

__all__ = ["DEMO_SPEC", "MODEL_TIMEOUT_S", "build_model", "split_spec"]

DEMO_SPEC = "demo"
MODEL_TIMEOUT_S = 120.0  # One model call; the manager's turn timeout bounds the whole turn.

_log = structlog.get_logger(__name__)

_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_EXTRAS = {"anthropic": "switchboard[anthropic]"}
# init_chat_model's providers whose package is not simply `langchain-<provider>`.
_PACKAGES = {
    "azure_openai": "langchain-openai",
    "azure_ai": "langchain-azure-ai",
    "bedrock": "langchain-aws",
    "bedrock_converse": "langchain-aws",
    "google_anthropic_vertex": "langchain-google-vertexai",
    "nvidia": "langchain-nvidia-ai-endpoints",
    "together": "langchain-together",
}
_NO_KEY = "not-needed"  # sent to keyless OpenAI-compatible servers, which ignore it


def split_spec(spec: str) -> tuple[str, str]:
    """`provider:model` -> (provider, model); the model part may itself contain colons."""
    provider, sep, model = spec.strip().partition(":")
    if not sep or not provider or not model:
        raise ConfigError(
            f"SWITCHBOARD_MODEL must be 'demo' or 'provider:model' (e.g. openai:gpt-4o-mini), "
            f"got {spec!r}"
        )
    return provider.strip().lower(), model.strip()


def build_model(
    spec: str,
    *,
    openai_base_url: str | None,
    openai_api_key: str | None,
    anthropic_api_key: str | None,
) -> BaseChatModel:
    """The chat model for `spec`; raises `ConfigError` with one clear line when it cannot."""
    if spec.strip().lower() == DEMO_SPEC:
        return DemoChatModel()
    provider, model = split_spec(spec)
    kwargs: dict[str, Any] = {}
    if provider == "openai":
        # A local OpenAI-compatible server (Ollama, vLLM, LM Studio) takes no key, but the
        # OpenAI client insists on one: with a base URL and no key, any placeholder will do.
        key = openai_api_key or (_NO_KEY if openai_base_url else None)
        kwargs = {"api_key": _required_key(provider, spec, key)}
        kwargs["timeout"] = MODEL_TIMEOUT_S
        kwargs["stream_usage"] = True  # token counts for budgets when replies are streamed
        if openai_base_url:
            kwargs["base_url"] = openai_base_url
    elif provider == "anthropic":
        kwargs = {"api_key": _required_key(provider, spec, anthropic_api_key)}
        kwargs["timeout"] = MODEL_TIMEOUT_S
    try:
        from langchain.chat_models import init_chat_model

        # `kwargs` never holds `configurable_fields`, so this is the overload giving a BaseChatModel
        # (mypy can't tell from a dict and infers Any).
        chat_model: BaseChatModel = init_chat_model(model, model_provider=provider, **kwargs)
    except ImportError:
        extra = _EXTRAS.get(provider)
        package = _PACKAGES.get(provider, "langchain-" + provider.replace("_", "-"))
        hint = (
            f"pip install '{extra}'"
            if extra
            else f"pip install {package} into Switchboard's environment"
        )
        raise ConfigError(
            f"model provider {provider!r} (SWITCHBOARD_MODEL={spec}) is not installed: {hint}"
        ) from None
    except ValueError as exc:
        if "provider" in str(exc).lower():
            raise ConfigError(
                f"unsupported model provider {provider!r} in SWITCHBOARD_MODEL={spec}"
            ) from None
        raise ConfigError(_failed(spec, exc)) from None
    except Exception as exc:  # provider constructors validate their own settings
        raise ConfigError(_failed(spec, exc)) from None
    if provider == "openai":  # chat requests need no SDK walk (`agent/openai_requests.py`)
        from agent.openai_requests import send_plain_json  # imports openai: ~20 MB, only for it

        send_plain_json(chat_model)
    _log.info("model.built", provider=provider, model=model, base_url=bool(openai_base_url))
    return chat_model


def _required_key(provider: str, spec: str, key: str | None) -> str:
    if not key:
        raise ConfigError(
            f"{_KEY_VARIABLES[provider]} is not set (needed by SWITCHBOARD_MODEL={spec})"
        )
    return key


def _failed(spec: str, exc: Exception) -> str:
    """Provider errors may quote settings, so only the error class is shown."""
    return f"could not create the model for SWITCHBOARD_MODEL={spec} ({exc.__class__.__name__}); check its settings"
