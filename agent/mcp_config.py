"""The MCP server config (`SWITCHBOARD_MCP_CONFIG`): read, resolve, mask, merge. Pure functions.

The file is the format of Claude Desktop and DeerFlow:

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
                   "env": {"API_TOKEN": "$FILES_TOKEN"}},
        "search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${SEARCH_KEY}"},
                   "transport": "streamable_http"}}}

A server has `command` (+ `args`, `env`, `cwd`): stdio; or `url` (+ `headers`, `transport`:
`streamable_http` (default, also `http`), or `sse`). `"enabled": false` keeps it configured but
off. String values name environment variables as `$VAR` (the whole value) or `${VAR}` (inside a
value); they are resolved into a NEW structure when tools load, so the config as stored (and as
the admin API shows it) keeps the reference, never the secret.

Masking for the admin API: every value under `env` and `headers`, every value whose key looks
like a credential (token, secret, key, password, auth…), and credentials inside URLs become
`***` — unless the value is only a `$VAR` reference, which names a secret without holding one.
`merge_config` applies a PUT: servers merge key by key, `null` removes a server or a key, and a
`***` sent back keeps the stored value it stands for.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from switchboard.errors import ConfigError

__all__ = [
    "MASK",
    "MissingVariable",
    "load_mcp_config",
    "mask_config",
    "merge_config",
    "resolve_vars",
    "server_connection",
    "validate_config",
]

MASK = "***"
_SETTING = "SWITCHBOARD_MCP_CONFIG"
_WHOLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_KEY = re.compile(
    r"(token|secret|passw|api[-_]?key|apikey|auth|credential|cookie|private|session)", re.I
)
_SECRET_CONTAINERS = frozenset({"env", "headers"})
_TRANSPORTS = {
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "http": "streamable_http",
    "sse": "sse",
    "stdio": "stdio",
}


class MissingVariable(ConfigError):
    """A `$VAR` the environment does not define; the message names the variable only."""

    def __init__(self, name: str) -> None:
        super().__init__(f"environment variable {name} is not set")
        self.name = name


def load_mcp_config(path: Path) -> dict[str, Any]:
    """The file's config, checked; a missing or malformed file is one line naming the setting."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{_SETTING}: file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{_SETTING}: cannot read {path} ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{_SETTING}: {path} is not JSON (line {exc.lineno})") from None
    return validate_config(raw)


def validate_config(raw: Any) -> dict[str, Any]:
    """`{"mcpServers": {name: {...}}}` with each server stdio (`command`) or HTTP (`url`)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("mcpServers", {}), dict):
        raise ConfigError(f'{_SETTING}: expected {{"mcpServers": {{name: server}}}}')
    servers = raw.setdefault("mcpServers", {})
    for name, server in servers.items():
        if not isinstance(server, dict):
            raise ConfigError(f"{_SETTING}: server {name!r} must be an object")
        has_command = isinstance(server.get("command"), str) and server["command"]
        has_url = isinstance(server.get("url"), str) and server["url"]
        if bool(has_command) == bool(has_url):
            raise ConfigError(f"{_SETTING}: server {name!r} needs either 'command' or 'url'")
        transport = server.get("transport") or server.get("type")
        if transport is not None and transport not in _TRANSPORTS:
            raise ConfigError(f"{_SETTING}: server {name!r} has an unknown transport")
        for field in ("env", "headers"):
            if field in server and not isinstance(server[field], dict | None):
                raise ConfigError(f"{_SETTING}: server {name!r}: {field!r} must be an object")
        if "args" in server and not isinstance(server["args"], list):
            raise ConfigError(f"{_SETTING}: server {name!r}: 'args' must be a list")
    return raw


def resolve_vars(value: Any, environ: Mapping[str, str]) -> Any:
    """A copy of `value` with `$VAR` / `${VAR}` strings replaced from `environ`, recursively.

    The input is never changed: the stored config keeps its references."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole:
            return _lookup(whole.group(1), environ)
        return _BRACED.sub(lambda m: _lookup(m.group(1), environ), value)
    if isinstance(value, Mapping):
        return {k: resolve_vars(v, environ) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [resolve_vars(v, environ) for v in value]
    return value


def _lookup(name: str, environ: Mapping[str, str]) -> str:
    if name not in environ:
        raise MissingVariable(name)
    return environ[name]


def server_connection(server: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """One server's `langchain-mcp-adapters` connection, with variables resolved."""
    resolved = resolve_vars(server, environ)
    transport = _TRANSPORTS.get(str(resolved.get("transport") or resolved.get("type") or ""), "")
    if resolved.get("command"):
        connection: dict[str, Any] = {
            "transport": "stdio",
            "command": resolved["command"],
            "args": [str(a) for a in resolved.get("args") or ()],
        }
        if resolved.get("env"):
            connection["env"] = {str(k): str(v) for k, v in resolved["env"].items()}
        if resolved.get("cwd"):
            connection["cwd"] = str(resolved["cwd"])
        return connection
    connection = {"transport": transport or "streamable_http", "url": resolved["url"]}
    if resolved.get("headers"):
        connection["headers"] = {str(k): str(v) for k, v in resolved["headers"].items()}
    return connection


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy fit to show: every secret-looking value is `***` (see the module doc)."""
    return _mask(config, inside_secrets=False)  # type: ignore[no-any-return]


def _mask(value: Any, *, inside_secrets: bool, key: str = "") -> Any:
    if isinstance(value, Mapping):
        return {
            k: _mask(
                v,
                inside_secrets=inside_secrets or k in _SECRET_CONTAINERS,
                key=str(k),
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask(v, inside_secrets=inside_secrets, key=key) for v in value]
    if not isinstance(value, str):
        return MASK if inside_secrets and value is not None else value
    if _WHOLE.match(value):
        return value  # names a variable; holds no secret
    if inside_secrets or _SECRET_KEY.search(key):
        return MASK
    if "://" in value:
        return _mask_url(value)
    if key == "args" and _looks_like_secret_arg(value):
        return MASK
    return value


def _looks_like_secret_arg(arg: str) -> bool:
    """`--token=abc`, `--api-key=abc`: a credential passed on the command line."""
    flag, eq, _ = arg.partition("=")
    return bool(eq) and bool(_SECRET_KEY.search(flag))


def _mask_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        _creds, at, host = netloc.rpartition("@")
        if at:
            netloc = f"{MASK}@{host}"
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = "&".join(
            f"{quote(k)}={MASK if _SECRET_KEY.search(k) or not _WHOLE.match(v) else v}"
            for k, v in pairs
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return MASK


def merge_config(stored: Mapping[str, Any], incoming: Mapping[str, Any]) -> dict[str, Any]:
    """`stored` updated by a PUT body: deep merge, `null` deletes, `***` keeps the stored value.

    Raises `ConfigError` when a `***` stands where nothing is stored (it cannot be resolved)."""
    merged = _merge(copy.deepcopy(dict(stored)), incoming, path="")
    return validate_config(merged)


def _merge(stored: Any, incoming: Any, *, path: str) -> Any:
    if incoming == MASK:
        if stored is None or stored == MASK:
            raise ConfigError(f"{path or 'value'}: '***' sent back but no value is stored there")
        return stored
    if (
        isinstance(incoming, str)
        and isinstance(stored, str)
        and MASK in incoming
        and "://" in stored
        and incoming == _mask_url(stored)
    ):
        return stored  # a URL whose credentials came back masked
    if isinstance(incoming, Mapping):
        base: dict[str, Any] = dict(stored) if isinstance(stored, Mapping) else {}
        for key, value in incoming.items():
            if value is None:
                base.pop(key, None)
                continue
            base[key] = _merge(base.get(key), value, path=f"{path}.{key}" if path else key)
        return base
    if isinstance(incoming, list):
        old = stored if isinstance(stored, list) else []
        return [
            _merge(old[i] if i < len(old) else None, v, path=f"{path}[{i}]")
            for i, v in enumerate(incoming)
        ]
    return incoming
