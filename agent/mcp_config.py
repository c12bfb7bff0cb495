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

The admin API shows the config through `switchboard.masking.mask` (the one masking function of
every admin read). `merge_config` applies a PUT: servers merge key by key, `null` removes a server
or a key, and a value sent back exactly as it was shown (`***`, or a URL or argument with `***`
in it) keeps the stored value it stands for, but only while the server's target (its `url`, or
its `command`, `args`, `cwd` and `env`) is unchanged: a secret is never carried to a new host or
program, neither through `***` nor by leaving it out of the PUT. A stdio server's `env` counts as
its target because it can point the program elsewhere (`UPSTREAM_URL`, `HTTP_PROXY`,
`DOCKER_HOST`): any variable changed, added or removed means every stored secret of that server
must be sent again. A URL server's `headers` are not: they travel to its `url`, which decides
where they go.

`merge_http_update` adds the rules for a config that arrives over HTTP rather than from the file
(issue 35): it may reference only the variables in `SWITCHBOARD_MCP_ALLOWED_VARS` (a reference
the file already holds at the same place, with the server's target unchanged, is not new), and it
may add or change a stdio command (or an `env` variable that makes a program load other code,
such as `LD_PRELOAD` or `NODE_OPTIONS`) only with `SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from switchboard.errors import ConfigError
from switchboard.masking import MASK, mask

__all__ = [
    "MissingVariable",
    "UpdateRefused",
    "load_mcp_config",
    "merge_config",
    "merge_http_update",
    "resolve_vars",
    "server_connection",
    "validate_config",
]

_SETTING = "SWITCHBOARD_MCP_CONFIG"
_WHOLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TARGET = ("url", "command", "args", "cwd")
_COMMAND = ("command", "args", "cwd")
# `env` names that make a program load code other than its own (a command change in disguise).
_LOADS_CODE = re.compile(
    r"^(PATH|HOME|ENV|BASH_ENV|SHELL|SHELLOPTS|IFS|TMPDIR|CLASSPATH|JAVA_TOOL_OPTIONS|"
    r"_JAVA_OPTIONS|JDK_JAVA_OPTIONS|LD_\w*|DYLD_\w*|NODE_\w*|NPM_CONFIG_\w*|YARN_\w*|"
    r"COREPACK_\w*|PYTHON\w*|PIP_\w*|UV_\w*|VIRTUAL_ENV|CONDA_\w*|PERL\w*|RUBY\w*|GEM_\w*|"
    r"BUNDLE_\w*|GIT_\w*|XDG_\w*|DENO_\w*|BUN_\w*|GO(PATH|ROOT|FLAGS|PROXY|TOOLCHAIN|BIN)|"
    r"CARGO_\w*|RUSTUP_\w*|DOTNET_\w*)$",
    re.I,
)
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


class UpdateRefused(ConfigError):
    """A change the admin API may not make. `forbidden`: it would run a new command on the host,
    which only `SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on` allows (HTTP 403; otherwise 422)."""

    def __init__(self, message: str, *, forbidden: bool = False) -> None:
        super().__init__(message)
        self.forbidden = forbidden


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


def merge_config(stored: Mapping[str, Any], incoming: Mapping[str, Any]) -> dict[str, Any]:
    """`stored` updated by a PUT body: deep merge, `null` deletes, a masked value sent back keeps
    the stored value, unless the server's target changed (see the module doc).

    Raises `ConfigError` when a `***` cannot be resolved."""
    merged = _merge(copy.deepcopy(dict(stored)), incoming, path="")
    servers = incoming.get("mcpServers")
    if isinstance(servers, Mapping):
        old_servers = stored.get("mcpServers") or {}
        for name, server in servers.items():
            old = old_servers.get(name)
            if isinstance(server, Mapping) and isinstance(old, Mapping):
                new = merged.get("mcpServers", {}).get(name)
                if isinstance(new, Mapping) and _target(new) != _target(old):
                    moved = any(new.get(f) != old.get(f) for f in _TARGET)
                    _refuse_carried_secrets(name, old, server, "url/command" if moved else "env")
    return validate_config(merged)


def merge_http_update(
    stored: Mapping[str, Any],
    incoming: Mapping[str, Any],
    *,
    allowed_vars: frozenset[str],
    allow_commands: bool,
) -> dict[str, Any]:
    """`merge_config` for a body received over HTTP, with its own limits (see the module doc).

    Raises `UpdateRefused` naming the server and the variable or field, never a value."""
    old_servers: Mapping[str, Any] = stored.get("mcpServers") or {}
    sent = incoming.get("mcpServers")
    changes = (
        [(n, s) for n, s in sent.items() if s is not None] if isinstance(sent, Mapping) else []
    )

    def before(name: str) -> Mapping[str, Any] | None:
        old = old_servers.get(name)
        return old if isinstance(old, Mapping) else None

    preview = _merge(copy.deepcopy(dict(stored)), incoming, path="").get("mcpServers") or {}
    if not allow_commands:  # first: "needs the setting" says more than any other refusal
        for name, _server in changes:
            if isinstance(preview.get(name), Mapping):
                _refuse_new_command(name, before(name), preview[name])
    for name, server in changes:  # then a variable it may not use, before "send it again"
        old, new = before(name), preview.get(name)
        same_target = old is not None and isinstance(new, Mapping) and _target(old) == _target(new)
        _refuse_new_variables(
            server, old if same_target else None, allowed_vars, where=f"server {name!r}"
        )
    rest = {k: v for k, v in incoming.items() if k != "mcpServers"}
    _refuse_new_variables(rest, stored, allowed_vars, where="the config")
    return merge_config(stored, incoming)


def _target(server: Mapping[str, Any]) -> list[Any]:
    """Where a server's secrets go: its url, or its program and that program's environment."""
    target = [server.get(field) for field in _TARGET]
    return [*target, server.get("env") or {}] if server.get("command") else target


def _refuse_carried_secrets(
    name: str, old: Mapping[str, Any], sent: Mapping[str, Any], changed: str
) -> None:
    """A server whose target (`changed`: what of it) changed keeps no stored secret it was not
    sent again."""
    if _contains_mask(sent):
        raise UpdateRefused(
            f"server {name!r}: its {changed} changed, so '***' cannot stand for a stored "
            "secret; send the value itself"
        )
    kept = _kept_secrets(old, sent, hidden=False, path="")
    if kept:
        raise UpdateRefused(
            f"server {name!r}: its {changed} changed, and stored secrets are not carried to a "
            f"new target: send {', '.join(kept)} again, or null to drop"
        )


def _kept_secrets(old: Any, sent: Any, *, hidden: bool, path: str) -> list[str]:
    """Paths of secrets (values shown masked, and `$VAR` references) in `old` that a merge with
    `sent` would keep without their being sent again."""
    if not isinstance(old, Mapping):
        return []
    found: list[str] = []
    for key, value in old.items():
        where = f"{path}.{key}" if path else str(key)
        inside = hidden or str(key).lower() in ("env", "headers")
        if key not in sent:
            if value in (None, "", {}, []):
                continue
            if inside or mask(value, key=str(key)) != value or _has_reference(value):
                found.append(where)
        elif isinstance(sent[key], Mapping):
            found += _kept_secrets(value, sent[key], hidden=inside, path=where)
    return found


def _refuse_new_variables(
    sent: Any, old: Any, allowed: frozenset[str], *, where: str, path: str = ""
) -> None:
    """Every `$VAR` in `sent` must be allowed, or stand unchanged where `old` already has it."""
    if isinstance(sent, str):
        if sent == old:
            return
        for var in _references(sent):
            if var not in allowed:
                raise UpdateRefused(
                    f"{where}: {path or 'value'} references ${var}, which a config sent over "
                    "HTTP may not use (allowed: SWITCHBOARD_MCP_ALLOWED_VARS)"
                )
    elif isinstance(sent, Mapping):
        for key, value in sent.items():
            below = old.get(key) if isinstance(old, Mapping) else None
            step = f"{path}.{key}" if path else str(key)
            _refuse_new_variables(value, below, allowed, where=where, path=step)
    elif isinstance(sent, list):
        for i, value in enumerate(sent):
            below = old[i] if isinstance(old, list) and i < len(old) else None
            _refuse_new_variables(value, below, allowed, where=where, path=f"{path}[{i}]")


def _references(value: str) -> list[str]:
    """The variables `resolve_vars` would read for this string, in its own terms."""
    whole = _WHOLE.match(value)
    return [whole.group(1)] if whole else _BRACED.findall(value)


def _refuse_new_command(name: str, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
    if not new.get("command"):
        return
    changed = old is None or any(old.get(f) != new.get(f) for f in _COMMAND)
    old_env = (old or {}).get("env") or {}
    loaders = [
        str(k)
        for k, v in (new.get("env") or {}).items()
        if _LOADS_CODE.match(str(k)) and old_env.get(k) != v
    ]
    if changed or loaders:
        what = "its command, args or cwd" if changed else f"env {', '.join(loaders)}"
        raise UpdateRefused(
            f"server {name!r}: setting {what} over HTTP would run a new program on this host; "
            "that needs SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on (or edit SWITCHBOARD_MCP_CONFIG)",
            forbidden=True,
        )


def _has_reference(value: Any) -> bool:
    """Whether resolving `value` would read a variable (a secret, once resolved)."""
    if isinstance(value, str):
        return bool(_references(value))
    if isinstance(value, Mapping):
        return any(_has_reference(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_reference(v) for v in value)
    return False


def _contains_mask(value: Any) -> bool:
    if isinstance(value, str):
        return MASK in value
    if isinstance(value, Mapping):
        return any(_contains_mask(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_mask(v) for v in value)
    return False


def _merge(stored: Any, incoming: Any, *, path: str, key: str = "") -> Any:
    if isinstance(incoming, str) and MASK in incoming:
        if stored is None or stored == MASK:
            raise ConfigError(f"{path or 'value'}: '***' sent back but no value is stored there")
        if incoming == MASK or mask(stored, key=key) == incoming:
            return stored  # shown masked (whole, or a URL/argument with `***` in it), sent back
        raise ConfigError(
            f"{path or 'value'}: '***' sent back, but not as the stored value was shown; "
            "send the value itself"
        )
    if isinstance(incoming, Mapping):
        base: dict[str, Any] = dict(stored) if isinstance(stored, Mapping) else {}
        for k, value in incoming.items():
            if value is None:
                base.pop(k, None)
                continue
            base[k] = _merge(base.get(k), value, path=f"{path}.{k}" if path else k, key=str(k))
        return base
    if isinstance(incoming, list):
        old = stored if isinstance(stored, list) else []
        return [
            _merge(old[i] if i < len(old) else None, v, path=f"{path}[{i}]", key=key)
            for i, v in enumerate(incoming)
        ]
    return incoming
