"""The MCP config: `$VAR` resolution without mutation, masking for the admin API, PUT merging,
and the limits on a config received over HTTP (issue 35)."""

from __future__ import annotations

import copy
import json

import pytest

from agent import UpdateRefused, merge_config, merge_http_update, validate_config
from agent.mcp_config import MissingVariable, resolve_vars, server_connection
from switchboard.errors import ConfigError
from switchboard.masking import MASK, mask

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
    masked = mask(CONFIG)
    text = json.dumps(masked)
    for secret in SECRETS:
        assert secret not in text, secret
    vault = masked["mcpServers"]["vault"]
    assert vault["env"] == {"TOKEN": "$VAULT_TOKEN", "PLAIN": MASK}
    assert vault["args"] == ["server.py", "--api-key=***", "--verbose"]
    assert vault["command"] == "python"
    search = masked["mcpServers"]["search"]
    assert search["headers"] == {"Authorization": MASK, "X-Team": MASK}
    assert search["url"] == "https://bob:***@mcp.example.com/mcp?key=***"
    assert search["transport"] == "streamable_http"


def test_a_put_that_sends_the_mask_back_keeps_the_stored_secret() -> None:
    incoming = mask(CONFIG)
    incoming["mcpServers"]["vault"]["enabled"] = False
    incoming["mcpServers"]["new"] = {"url": "http://127.0.0.1:9/mcp"}
    merged = merge_config(CONFIG, incoming)
    vault = merged["mcpServers"]["vault"]
    assert vault["env"] == CONFIG["mcpServers"]["vault"]["env"]
    assert vault["args"] == CONFIG["mcpServers"]["vault"]["args"]
    assert vault["enabled"] is False
    assert merged["mcpServers"]["search"] == CONFIG["mcpServers"]["search"]
    assert "new" in merged["mcpServers"]


def test_a_mask_sent_with_a_new_url_does_not_keep_the_stored_authorization() -> None:
    moved = {"url": "https://elsewhere.example.net/mcp", "headers": {"Authorization": MASK}}
    with pytest.raises(UpdateRefused, match="url/command changed") as caught:
        merge_config(CONFIG, {"mcpServers": {"search": moved}})
    assert "SEARCH_KEY" not in str(caught.value) and "team-header-value" not in str(caught.value)


def test_a_stored_secret_left_out_of_a_put_is_not_carried_to_a_new_url() -> None:
    moved = {"url": "https://elsewhere.example.net/mcp"}
    with pytest.raises(UpdateRefused, match="headers") as caught:
        merge_config(CONFIG, {"mcpServers": {"search": moved}})
    for secret in SECRETS:
        assert secret not in str(caught.value)


def test_a_new_url_with_its_secrets_sent_again_is_accepted() -> None:
    moved = {
        "url": "https://elsewhere.example.net/mcp",
        "headers": {"Authorization": "Bearer new-value", "X-Team": None},
        "api_token": None,
    }
    merged = merge_config(CONFIG, {"mcpServers": {"search": moved}})
    assert merged["mcpServers"]["search"]["headers"] == {"Authorization": "Bearer new-value"}


def test_a_mask_sent_with_a_changed_command_does_not_keep_the_stored_env() -> None:
    changed = {"command": "/usr/bin/other", "env": {"PLAIN": MASK}}
    with pytest.raises(UpdateRefused, match="url/command changed"):
        merge_config(CONFIG, {"mcpServers": {"vault": changed}})


@pytest.mark.parametrize(
    "env",
    [
        {"UPSTREAM_URL": "https://collector.evil.test"},
        {"HTTP_PROXY": "http://proxy.evil.test:3128"},
        {"DOCKER_HOST": "tcp://docker.evil.test:2375"},
        {"TOKEN": None},
        {"PLAIN": "replaced"},
    ],
    ids=["added UPSTREAM_URL", "added HTTP_PROXY", "added DOCKER_HOST", "removed", "changed"],
)
def test_an_env_change_is_a_target_change_so_stored_secrets_must_be_sent_again(
    env: dict[str, object],
) -> None:
    if "PLAIN" not in env:  # the stored secret left masked beside the change
        masked = {"mcpServers": {"vault": {"env": {**env, "PLAIN": MASK}}}}
        with pytest.raises(UpdateRefused, match="its env changed, so '\\*\\*\\*' cannot stand"):
            merge_config(CONFIG, masked)
    with pytest.raises(UpdateRefused, match="its env changed") as caught:
        merge_config(CONFIG, {"mcpServers": {"vault": {"env": env}}})
    assert "args" in str(caught.value)
    for secret in SECRETS:
        assert secret not in str(caught.value)


def test_an_env_change_with_the_servers_secrets_sent_again_is_accepted() -> None:
    sent = {
        "args": ["server.py", "--api-key=new-arg-secret", "--verbose"],
        "env": {"UPSTREAM_URL": "https://other.example.net", "PLAIN": "new-env", "TOKEN": None},
    }
    merged = merge_config(CONFIG, {"mcpServers": {"vault": sent}})
    assert merged["mcpServers"]["vault"]["env"] == {
        "UPSTREAM_URL": "https://other.example.net",
        "PLAIN": "new-env",
    }


def test_a_url_shown_masked_and_sent_back_keeps_its_credentials() -> None:
    shown = mask(CONFIG)["mcpServers"]["search"]["url"]
    merged = merge_config(CONFIG, {"mcpServers": {"search": {"url": shown}}})
    assert merged["mcpServers"]["search"]["url"] == CONFIG["mcpServers"]["search"]["url"]


def test_a_masked_url_pointing_at_another_host_is_refused() -> None:
    shown = mask(CONFIG)["mcpServers"]["search"]["url"].replace("example.com", "evil.test")
    with pytest.raises(ConfigError, match="send the value itself"):
        merge_config(CONFIG, {"mcpServers": {"search": {"url": shown}}})


def test_a_put_merges_deletes_with_null_and_replaces_what_it_sends() -> None:
    args = CONFIG["mcpServers"]["vault"]["args"]  # an env change sends the args' secret again
    vault = {"args": args, "env": {"PLAIN": "changed", "TOKEN": None}}
    merged = merge_config(CONFIG, {"mcpServers": {"search": None, "vault": vault}})
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


def _http(
    incoming: dict[str, object], *, allowed: frozenset[str] = frozenset(), commands: bool = False
) -> dict[str, object]:
    return merge_http_update(CONFIG, incoming, allowed_vars=allowed, allow_commands=commands)


@pytest.mark.parametrize(
    "value",
    ["$OPENAI_API_KEY", "${OPENAI_API_KEY}", "Bearer ${OPENAI_API_KEY}", "a${OPENAI_API_KEY}b"],
)
def test_an_http_config_may_not_reference_a_variable_outside_the_allowed_list(value: str) -> None:
    body = {"mcpServers": {"search": {"headers": {"Authorization": value}}}}
    with pytest.raises(UpdateRefused, match=r"\$OPENAI_API_KEY") as caught:
        _http(body, allowed=frozenset({"SEARCH_KEY"}))
    assert "SWITCHBOARD_MCP_ALLOWED_VARS" in str(caught.value)
    assert not caught.value.forbidden


@pytest.mark.parametrize("where", ["url", "command", "args"])
def test_a_new_server_may_not_reference_a_variable_anywhere(where: str) -> None:
    server: dict[str, object] = {"url": "https://x.example/${OPENAI_API_KEY}"}
    if where != "url":
        server = {"command": "node", "args": ["--key", "$OPENAI_API_KEY"]}
        if where == "command":
            server = {"command": "$OPENAI_API_KEY"}
    with pytest.raises(UpdateRefused, match="OPENAI_API_KEY"):
        _http({"mcpServers": {"new": server}}, commands=True)


def test_an_allowed_variable_may_be_referenced_over_http() -> None:
    body = {"mcpServers": {"search": {"headers": {"Authorization": "Bearer ${TEAM_KEY}"}}}}
    merged = _http(body, allowed=frozenset({"TEAM_KEY"}))
    assert merged["mcpServers"]["search"]["headers"]["Authorization"] == "Bearer ${TEAM_KEY}"


def test_a_reference_the_file_holds_may_be_sent_back_unchanged() -> None:
    merged = _http(mask(CONFIG))  # GET, then PUT the same thing back
    assert merged == CONFIG


def test_a_reference_the_file_holds_is_new_once_the_command_changes() -> None:
    body = {
        "mcpServers": {
            "vault": {"args": ["other.py"], "env": {"TOKEN": "$VAULT_TOKEN", "PLAIN": "x"}}
        }
    }
    with pytest.raises(UpdateRefused, match="VAULT_TOKEN"):
        _http(body, commands=True)


def test_a_reference_the_file_holds_may_not_move_to_another_place() -> None:
    body = {"mcpServers": {"vault": {"env": {"OTHER": "$VAULT_TOKEN"}}}}
    with pytest.raises(UpdateRefused, match="VAULT_TOKEN"):
        _http(body)


@pytest.mark.parametrize(
    "server",
    [
        {"new": {"command": "sh", "args": ["-c", "id"]}},
        {"vault": {"command": "/bin/sh"}},
        {"vault": {"args": ["server.py", "--api-key=***", "--verbose", "--extra"]}},
        {"vault": {"cwd": "/tmp"}},
        {"vault": {"env": {"LD_PRELOAD": "/tmp/evil.so"}}},
        {"vault": {"env": {"NODE_OPTIONS": "--require /tmp/evil.js"}}},
        {"vault": {"env": {"PATH": "/tmp/evil:/usr/bin"}}},
        {
            "search": {
                "url": None,
                "command": "sh",
                "headers": None,
                "transport": None,
                "api_token": None,
            }
        },
    ],
    ids=["new", "command", "args", "cwd", "LD_PRELOAD", "NODE_OPTIONS", "PATH", "url-to-command"],
)
def test_a_new_or_changed_command_over_http_is_forbidden_unless_allowed(
    server: dict[str, object],
) -> None:
    with pytest.raises(UpdateRefused, match="SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on") as caught:
        _http({"mcpServers": server})
    assert caught.value.forbidden


def test_with_commands_allowed_a_new_stdio_server_is_accepted() -> None:
    merged = _http(
        {"mcpServers": {"new": {"command": "uvx", "args": ["mcp-server-time"]}}}, commands=True
    )
    assert merged["mcpServers"]["new"]["command"] == "uvx"


def test_enabling_a_server_and_editing_its_env_or_headers_needs_no_command_permission() -> None:
    args = CONFIG["mcpServers"]["vault"]["args"]  # an env change sends the args' secret again
    body = {
        "mcpServers": {
            "vault": {
                "enabled": False,
                "args": args,
                "env": {"PLAIN": "rotated", "EXTRA": "1", "TOKEN": None},
            },
            "search": {"headers": {"X-Team": "other"}},
            "web": {"url": "https://mcp.example.org/mcp"},
        }
    }
    merged = _http(body)
    assert merged["mcpServers"]["vault"]["env"]["PLAIN"] == "rotated"
    assert merged["mcpServers"]["web"]["url"] == "https://mcp.example.org/mcp"
