"""MCP tools for the built-in agent, through `langchain-mcp-adapters`.

Each configured server is loaded on its own, with a time limit: a server that fails to start (a
missing command, a refused connection, an unset `$VAR`) is logged by name and error class and
skipped, and the agent still answers with the rest. Tools keep the server's names; when two
servers offer one name, the first server in the file wins (and a built-in tool beats both).

The adapters' client is stateless: every tool call opens a fresh session (a new stdio process,
or a new HTTP session), so nothing here holds a connection between turns and a reload only has
to build new tool objects. Stdio servers get the MCP SDK's minimal default environment plus
their own `env`, never Switchboard's own secrets.

`McpConfigFile` keeps the config file the admin API edits: it writes atomically (a temp file
renamed over the old one), so a crash mid-write leaves the previous config whole.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from langchain_core.tools import BaseTool

from agent.mcp_config import MissingVariable, load_mcp_config, server_connection
from switchboard.errors import ConfigError

__all__ = ["MCP_LOAD_TIMEOUT_S", "McpConfigFile", "McpServerStatus", "load_mcp_tools"]

MCP_LOAD_TIMEOUT_S = 30.0  # per server: starting a stdio server through npx can take a while

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """What became of one configured server: its tools, or why it was skipped."""

    name: str
    tools: tuple[str, ...] = ()
    error: str = ""  # an error class or a one-line reason, never a secret

    @property
    def ok(self) -> bool:
        return not self.error


async def load_mcp_tools(
    config: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    timeout_s: float = MCP_LOAD_TIMEOUT_S,
) -> tuple[list[BaseTool], list[McpServerStatus]]:
    """Tools of every enabled server that starts; one status per configured server."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    env = dict(os.environ if environ is None else environ)
    servers: Mapping[str, Any] = config.get("mcpServers") or {}
    names = [n for n, s in servers.items() if s.get("enabled", True) is not False]

    async def one(name: str) -> tuple[list[BaseTool], McpServerStatus]:
        try:
            connection = server_connection(servers[name], env)
        except MissingVariable as exc:
            _log.warning("mcp.server_skipped", server=name, reason=str(exc))
            return [], McpServerStatus(name, error=str(exc))
        client = MultiServerMCPClient({name: connection})  # type: ignore[dict-item]  # a dict from user JSON; the client checks its keys per transport
        try:
            tools = await asyncio.wait_for(client.get_tools(server_name=name), timeout_s)
        except Exception as exc:  # any failure of one server must not stop the agent
            error = _error_name(exc)
            _log.warning("mcp.server_skipped", server=name, error=error)
            return [], McpServerStatus(name, error=error)
        _log.info("mcp.server_loaded", server=name, tools=[t.name for t in tools])
        return tools, McpServerStatus(name, tuple(t.name for t in tools))

    loaded = await asyncio.gather(*(one(name) for name in names))
    tools: list[BaseTool] = []
    seen: set[str] = set()
    for server_tools, _status in loaded:
        for tool in server_tools:
            if tool.name not in seen:
                seen.add(tool.name)
                tools.append(tool)
    return tools, [status for _tools, status in loaded]


def _error_name(exc: BaseException) -> str:
    """The innermost error class of an exception group (anyio wraps stdio failures in one)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "TimeoutError (did not start in time)"
    return exc.__class__.__name__


class McpConfigFile:
    """The config file behind `SWITCHBOARD_MCP_CONFIG`: read it, replace it atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        """The stored config; an absent file is an empty config (the admin API may create it)."""
        if not self.path.exists():
            return {"mcpServers": {}}
        return load_mcp_config(self.path)

    def write(self, config: Mapping[str, Any]) -> None:
        text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".mcp-", suffix=".json", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(tmp, 0o600)  # it may hold secrets
            os.replace(tmp, self.path)
        except OSError as exc:
            raise ConfigError(
                f"SWITCHBOARD_MCP_CONFIG: cannot write {self.path} ({exc.__class__.__name__})"
            ) from None
