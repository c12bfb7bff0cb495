"""Admin HTTP API for MCP servers (admin key): see the config with secrets masked, change it.

Registered by `service/http.py` behind the same admin key as `/api/admin/config`.

| method | path              | does                                                            |
|--------|-------------------|-----------------------------------------------------------------|
| GET    | `/api/admin/mcp`  | the config with every secret-looking value `***`, and each server's tools or skip reason |
| PUT    | `/api/admin/mcp`  | merge a partial config (`{"mcpServers": {name: {...} or null}}`); a `***` sent back keeps the stored secret while the server's url, command and (stdio) env are unchanged; saved to `SWITCHBOARD_MCP_CONFIG` and the built-in agent's tools reloaded in this process |

A change nested deeper than `MAX_DEPTH` is refused (422) before anything is merged or written,
whether it came over the API or the console's form: a file that deep would make every later
read of it recurse past Python's limit (a 500 until someone edits the file by hand).

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

__all__ = [
    "MAX_DEPTH",
    "McpEditor",
    "McpOut",
    "McpRefused",
    "McpReloader",
    "ServerOut",
    "add_mcp_admin",
]

_log = structlog.get_logger(__name__)

MAX_DEPTH = 64  # as `service.http.MAX_JSON_DEPTH`; a real MCP config nests about 5 deep


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` containers deep (the outermost counts as 1, as
    the admin API counts brackets), found without recursing."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return False


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


class McpRefused(Exception):
    """A read or change the admin cannot have, with the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class McpEditor:
    """Reads and changes the MCP config for the admin API and the operator console alike, so a
    change refused over one is refused over the other. `agent` is None unless the agent is
    builtin; `allowed_vars` and `allow_commands` are SWITCHBOARD_MCP_ALLOWED_VARS and
    SWITCHBOARD_ADMIN_ALLOW_COMMANDS."""

    def __init__(
        self,
        *,
        file: McpConfigFile | None,
        agent: McpReloader | None,
        allowed_vars: frozenset[str] = frozenset(),
        allow_commands: bool = False,
    ) -> None:
        self._file = file
        self._agent = agent
        self._allowed_vars = allowed_vars
        self.allow_commands = allow_commands
        self._lock = asyncio.Lock()  # two changes at once must not lose one's edits

    def _out(self, config: dict[str, Any]) -> McpOut:
        statuses = self._agent.mcp_servers() if self._agent is not None else ()
        return McpOut(
            config=mask(config),
            servers=[
                ServerOut(name=s.name, loaded=s.ok, tools=list(s.tools), error=s.error)
                for s in statuses
            ],
            applies=self._agent is not None,
        )

    def _stored(self) -> dict[str, Any]:
        if self._file is None:
            raise McpRefused(409, "no MCP config file: set SWITCHBOARD_MCP_CONFIG")
        try:
            return self._file.read()
        except ConfigError as exc:
            raise McpRefused(409, str(exc)) from None

    async def show(self) -> McpOut:
        """The config with secrets masked, and what each server gave this process."""
        if self._file is None:
            return self._out({"mcpServers": {}})
        return self._out(await asyncio.to_thread(self._stored))

    async def update(self, body: dict[str, Any]) -> McpOut:
        """Merge `body` into the config, save it and reload this process's tools. Both the API
        and the console come here, so the depth limit is checked here, before anything else."""
        if _deeper_than(body, MAX_DEPTH):
            _log.warning("mcp.update_refused", reason="nesting")
            raise McpRefused(422, f"the change is nested deeper than {MAX_DEPTH} levels")
        async with self._lock:
            current = await asyncio.to_thread(self._stored)
            try:
                merged = merge_http_update(
                    current,
                    body,
                    allowed_vars=self._allowed_vars,
                    allow_commands=self.allow_commands,
                )
            except UpdateRefused as exc:
                _log.warning("mcp.update_refused", reason=str(exc), forbidden=exc.forbidden)
                raise McpRefused(403 if exc.forbidden else 422, str(exc)) from None
            except ConfigError as exc:
                raise McpRefused(422, str(exc)) from None
            assert self._file is not None  # _stored() refused otherwise
            try:
                await asyncio.to_thread(self._file.write, merged)
            except ConfigError as exc:
                raise McpRefused(503, str(exc)) from None
            _log.info("mcp.config_updated", servers=sorted(merged.get("mcpServers", {})))
            if self._agent is not None:
                await self._agent.load_mcp(merged)
        return self._out(merged)


def add_mcp_admin(
    app: FastAPI,
    *,
    editor: McpEditor,
    admin: Callable[..., Awaitable[None]],
    responses: dict[int | str, dict[str, Any]],
) -> None:
    """`admin` is the app's admin-key dependency."""

    @app.get(
        "/api/admin/mcp",
        response_model=McpOut,
        tags=["admin"],
        responses=responses,
        dependencies=[Depends(admin)],
    )
    async def mcp_show() -> McpOut:
        """The MCP config, secrets masked, and what each server gave this process."""
        try:
            return await editor.show()
        except McpRefused as exc:
            raise HTTPException(exc.status, exc.message) from None

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
        try:
            return await editor.update(body)
        except McpRefused as exc:
            raise HTTPException(exc.status, exc.message) from None
