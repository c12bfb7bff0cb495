"""Admin HTTP API for MCP servers (admin key): see the config with secrets masked, change it.

Registered by `service/http.py` behind the same admin key as `/api/admin/config`.

| method | path              | does                                                            |
|--------|-------------------|-----------------------------------------------------------------|
| GET    | `/api/admin/mcp`  | the config with every secret-looking value `***`, and each server's tools or skip reason |
| PUT    | `/api/admin/mcp`  | merge a partial config (`{"mcpServers": {name: {...} or null}}`); a `***` sent back keeps the stored secret; saved to `SWITCHBOARD_MCP_CONFIG` and the built-in agent's tools reloaded in this process |

Nothing here ever returns or logs a resolved secret: the stored config keeps `$VAR` references
and literal values alike, and every response goes through `mask_config`. Other worker
processes read the file when they start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import structlog
from fastapi import Body, Depends, FastAPI, HTTPException
from pydantic import BaseModel

from agent import McpConfigFile, McpServerStatus, mask_config, merge_config
from switchboard.errors import ConfigError

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
) -> None:
    """`admin` is the app's admin-key dependency; `agent` is None unless the agent is builtin."""
    lock = asyncio.Lock()  # two PUTs at once must not lose one's changes

    def out(config: dict[str, Any]) -> McpOut:
        statuses = agent.mcp_servers() if agent is not None else ()
        return McpOut(
            config=mask_config(config),
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
        """Merge the body into the config; `***` keeps a stored secret, `null` removes."""
        async with lock:
            current = await asyncio.to_thread(stored)
            try:
                merged = merge_config(current, body)
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
