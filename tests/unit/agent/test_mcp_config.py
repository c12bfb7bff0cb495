"""The MCP config: `$VAR` resolution without mutation, masking for the admin API, PUT merging."""

from __future__ import annotations

import copy
import json

import pytest

from agent import MASK, mask_config, merge_config, validate_config
from agent.mcp_config import MissingVariable, resolve_vars, server_connection
from switchboard.errors import ConfigError

CONFIG = {
    "mcpServers": {
        "vault": {
            "command": "python",
            "args": ["server.py", "--api-key=literal-arg-secret", "--verbose"],
            "env": {"TOKEN": "$VAULT_TOKEN", "PLAIN": "literal-env-secret"},
        },
        "search": {
            "url": "https://bob:url-pass@mcp.example.com/mcp?key=url-query-secret",
            "headers": {"Authorization": "Bearer ${SEARCH_KEY}", "X-Team": "team-header-value"},
            "transport": "streamable_http",
            "api_token": "top-level-token-secret",
        },
    }
}
SECRETS = [
    "literal-arg-secret",
    "literal-env-secret",
    "url-pass",
    "url-query-secret",
    "team-header-value",
    "top-level-token-secret",
]


def test_variables_resolve_recursively_into_a_copy() -> None:
    original = copy.deepcopy(CONFIG)
    env = {"VAULT_TOKEN": "t-1", "SEARCH_KEY": "k-2"}
    vault = server_connection(CONFIG["mcpServers"]["vault"], env)
    search = server_connection(CONFIG["mcpServers"]["search"], env)
    assert vault["transport"] == "stdio" and vault["env"]["TOKEN"] == "t-1"
    assert search["transport"] == "streamable_http"
    assert search["headers"]["Authorization"] == "Bearer k-2"
    assert resolve_vars({"a": [{"b": "$X"}, "${X}-y", 3]}, {"X": "v"}) == {
        "a": [{"b": "v"}, "v-y", 3]
    }
    assert original == CONFIG  # the loaded config keeps its references


def test_an_unset_variable_names_only_the_variable() -> None:
    with pytest.raises(MissingVariable) as caught:
        server_connection(CONFIG["mcpServers"]["vault"], {})
    assert caught.value.name == "VAULT_TOKEN" and "VAULT_TOKEN" in str(caught.value)


def test_masking_hides_every_secret_looking_value_but_keeps_references() -> None:
    masked = mask_config(CONFIG)
    text = json.dumps(masked)
    for secret in SECRETS:
        assert secret not in text, secret
    vault = masked["mcpServers"]["vault"]
    assert vault["env"] == {"TOKEN": "$VAULT_TOKEN", "PLAIN": MASK}
    assert vault["args"] == ["server.py", MASK, "--verbose"]
    assert vault["command"] == "python"
    search = masked["mcpServers"]["search"]
    assert search["headers"] == {"Authorization": MASK, "X-Team": MASK}
    assert search["url"].startswith("https://***@mcp.example.com/mcp?key=")
    assert search["transport"] == "streamable_http"


def test_a_put_that_sends_the_mask_back_keeps_the_stored_secret() -> None:
    incoming = mask_config(CONFIG)
    incoming["mcpServers"]["vault"]["args"].append("--more")
    incoming["mcpServers"]["new"] = {"url": "http://127.0.0.1:9/mcp"}
    merged = merge_config(CONFIG, incoming)
    vault = merged["mcpServers"]["vault"]
    assert vault["env"] == CONFIG["mcpServers"]["vault"]["env"]
    assert vault["args"] == [*CONFIG["mcpServers"]["vault"]["args"], "--more"]
    assert merged["mcpServers"]["search"] == CONFIG["mcpServers"]["search"]
    assert "new" in merged["mcpServers"]


def test_a_put_merges_deletes_with_null_and_replaces_what_it_sends() -> None:
    merged = merge_config(
        CONFIG,
        {"mcpServers": {"search": None, "vault": {"env": {"PLAIN": "changed", "TOKEN": None}}}},
    )
    assert set(merged["mcpServers"]) == {"vault"}
    assert merged["mcpServers"]["vault"]["env"] == {"PLAIN": "changed"}
    assert merged["mcpServers"]["vault"]["command"] == "python"


def test_a_mask_where_nothing_is_stored_is_refused() -> None:
    with pytest.raises(ConfigError, match="no value is stored"):
        merge_config(CONFIG, {"mcpServers": {"vault": {"env": {"NEW": MASK}}}})


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"mcpServers": []},
        {"mcpServers": {"x": {}}},
        {"mcpServers": {"x": {"command": "a", "url": "http://b"}}},
        {"mcpServers": {"x": {"url": "http://b", "transport": "carrier-pigeon"}}},
        {"mcpServers": {"x": {"command": "a", "args": "not-a-list"}}},
    ],
)
def test_malformed_configs_are_refused_naming_the_setting(bad: object) -> None:
    with pytest.raises(ConfigError, match="SWITCHBOARD_MCP_CONFIG"):
        validate_config(copy.deepcopy(bad))
