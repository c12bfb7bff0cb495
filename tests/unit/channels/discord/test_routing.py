"""How the Discord client is pointed at other endpoints (no sockets: URL rewriting only)."""

from __future__ import annotations

from discord.http import Route

from channels.discord.client import DEFAULT_API_BASE, RoutedHTTP

QUERY = "?v=10&encoding=json&compress=zstd-stream"


def test_route_base_is_discords_default_and_left_untouched() -> None:
    RoutedHTTP(api_base="http://127.0.0.1:9/api/v10", gateway_url=None)
    assert Route.BASE == DEFAULT_API_BASE


def test_explicit_gateway_takes_every_connect_and_keeps_the_query() -> None:
    http = RoutedHTTP(api_base=DEFAULT_API_BASE, gateway_url="ws://127.0.0.1:9/gw")
    assert http.gateway_for("wss://gateway.discord.gg/" + QUERY) == "ws://127.0.0.1:9/gw" + QUERY
    resume = "wss://gateway-us-east1-b.discord.gg" + QUERY
    assert http.gateway_for(resume) == "ws://127.0.0.1:9/gw" + QUERY


def test_discovered_gateway_replaces_only_the_builtin_default() -> None:
    http = RoutedHTTP(api_base=DEFAULT_API_BASE, gateway_url=None)
    default = "wss://gateway.discord.gg/" + QUERY
    assert http.gateway_for(default) == default
    http.discovered_gateway = "ws://127.0.0.1:9/gateway"
    assert http.gateway_for(default) == "ws://127.0.0.1:9/gateway" + QUERY
    resume = "wss://gateway-us-east1-b.discord.gg/" + QUERY
    assert http.gateway_for(resume) == resume
