"""Admin HTTP API for MCP servers (admin key): see the config with secrets masked, change it.

Registered by `service/http.py` behind the same admin key as `/api/admin/config`.

| method | path              | does                                                            |
|--------|-------------------|-----------------------------------------------------------------|
| GET    | `/api/admin/mcp`  | the config with every secret-looking value `***`, and each server's tools or skip reason |
| PUT    | `/api/admin/mcp`  | merge a partial config (`{"mcpServers": {name: {...} or null}}`); a `***` sent back keeps the stored secret while the server's url/command is unchanged; saved to `SWITCHBOARD_MCP_CONFIG` and the built-in agent's tools reloaded in this process |

A PUT is a config received over HTTP, so `merge_http_update`'s limits apply: only the variables
in `SWITCHBOARD_MCP_ALLOWED_VARS` may be referenced (422 naming the variable otherwise), and a
new or changed stdio command is a 403 unless `SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on`: whoever holds
the admin key must not thereby hold a shell on the host or the service's own secrets.

Nothing here ever returns or logs a resolved secret: the stored config keeps `$VAR` references
and literal values alike, and every response goes through `switchboard.masking.mask`. Other
worker processes read the file when they start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import structlog
from fastapi import Body, Depends, FastAPI, HTTPException
from pydantic import BaseModel

from agent import McpConfigFile, McpServerStatus, UpdateRefused, merge_http_update
from switchboard.errors import ConfigError
from switchboard.masking import mask

__all__ = ["McpOut", "McpReloader", "ServerOut", "add_mcp_admin"]

_log = structlog.get_logger(__name__)


class McpReloader(Protocol):
    """The built-in agent: reloads its MCP tools from a config."""

    async def load_mcp(self, config: Any) -> tuple[McpServerStatus, ...]: ...

    def mcp_servers(self) -> tuple[McpServerStatus, ...]: ...


class ServerOut(BaseModel):
    name: str
    loaded: bool
    tools: list[str]
    error: str  # why it was skipped ("" when loaded)


class McpOut(BaseModel):
    config: dict[str, Any]  # masked
    servers: list[ServerOut]  # what this process loaded (empty when the agent is not builtin)
    applies: bool  # whether this process's agent uses MCP tools (SWITCHBOARD_AGENT=builtin)


def add_mcp_admin(
    app: FastAPI,
    *,
    file: McpConfigFile | None,
    agent: McpReloader | None,
    admin: Callable[..., Awaitable[None]],
    responses: dict[int | str, dict[str, Any]],
    allowed_vars: frozenset[str] = frozenset(),
    allow_commands: bool = False,
) -> None:
    """`admin` is the app's admin-key dependency; `agent` is None unless the agent is builtin.
    `allowed_vars` and `allow_commands` are SWITCHBOARD_MCP_ALLOWED_VARS and
    SWITCHBOARD_ADMIN_ALLOW_COMMANDS."""
    lock = asyncio.Lock()  # two PUTs at once must not lose one's changes

    def out(config: dict[str, Any]) -> McpOut:
        statuses = agent.mcp_servers() if agent is not None else ()
        return McpOut(
            config=mask(config),
            servers=[
                ServerOut(name=s.name, loaded=s.ok, tools=list(s.tools), error=s.error)
                for s in statuses
            ],
            applies=agent is not None,
        )

    def stored() -> dict[str, Any]:
        if file is None:
            raise HTTPException(409, "no MCP config file: set SWITCHBOARD_MCP_CONFIG")
        try:
            return file.read()
        except ConfigError as exc:
            raise HTTPException(409, str(exc)) from None

    @app.get(
        "/api/admin/mcp",
        response_model=McpOut,
        tags=["admin"],
        responses=responses,
        dependencies=[Depends(admin)],
    )
    async def mcp_show() -> McpOut:
        """The MCP config, secrets masked, and what each server gave this process."""
        if file is None:
            return out({"mcpServers": {}})
        return out(await asyncio.to_thread(stored))

    @app.put(
        "/api/admin/mcp",
        response_model=McpOut,
        tags=["admin"],
        responses=responses,
        dependencies=[Depends(admin)],
    )
    async def mcp_update(body: dict[str, Any] = Body(...)) -> McpOut:
        """Merge the body into the config; `***` keeps a stored secret, `null` removes.
        Over HTTP only allowed variables, and no new command unless commands are allowed."""
        async with lock:
            current = await asyncio.to_thread(stored)
            try:
                merged = merge_http_update(
                    current, body, allowed_vars=allowed_vars, allow_commands=allow_commands
                )
            except UpdateRefused as exc:
                _log.warning("mcp.update_refused", reason=str(exc), forbidden=exc.forbidden)
                raise HTTPException(403 if exc.forbidden else 422, str(exc)) from None
            except ConfigError as exc:
                raise HTTPException(422, str(exc)) from None
            assert file is not None  # stored() refused otherwise
            try:
                await asyncio.to_thread(file.write, merged)
            except ConfigError as exc:
                raise HTTPException(503, str(exc)) from None
            _log.info("mcp.config_updated", servers=sorted(merged.get("mcpServers", {})))
            if agent is not None:
                await agent.load_mcp(merged)
        return out(merged)
