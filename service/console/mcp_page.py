"""The MCP page: each server's state and tools, enable or disable it, and partial changes in
the admin API's own format, through the API's own `McpEditor` (the same limits on commands
and variables apply)."""

from __future__ import annotations

import json

from fastapi.responses import Response

from service.console.auth import Guarded, Visit
from service.console.pages import page
from service.mcp_api import McpEditor, McpRefused

__all__ = ["mcp_page"]


def mcp_page(editor: McpEditor) -> Guarded:
    async def show(visit: Visit) -> Response:
        notice = error = ""
        status = 200
        if visit.request.method == "POST":
            try:
                notice = await _change_mcp(editor, visit)
            except McpRefused as exc:
                error, status = exc.message, exc.status
        try:
            shown = await editor.show()
        except McpRefused as exc:  # no config file: said once, whatever was asked
            shown, error, status = None, exc.message, exc.status
        servers = shown.config.get("mcpServers", {}) if shown is not None else {}
        loaded = {s.name: s for s in shown.servers} if shown is not None else {}
        return page(
            "mcp.html",
            title="MCP servers",
            here="/admin/mcp",
            csrf=visit.csrf,
            servers=[
                (name, server, loaded.get(name), json.dumps(server, indent=2, sort_keys=True))
                for name, server in sorted(servers.items())
                if isinstance(server, dict)
            ],
            applies=shown.applies if shown is not None else False,
            allow_commands=editor.allow_commands,
            change=visit.get("change") if error else "",
            notice=notice,
            error=error,
            status=status,
        )

    return show


async def _change_mcp(editor: McpEditor, visit: Visit) -> str:
    action, name = visit.get("action"), visit.get("server")
    if action in ("enable", "disable") and name:
        await editor.update({"mcpServers": {name: {"enabled": action == "enable"}}})
        return f"{name} {action}d."
    if action == "change":
        try:
            body = json.loads(visit.get("change"))
        except (ValueError, RecursionError):
            raise McpRefused(422, "the change is not valid JSON") from None
        if not isinstance(body, dict):
            raise McpRefused(422, 'the change must be an object: {"mcpServers": {...}}')
        await editor.update(body)
        return "MCP config saved."
    raise McpRefused(400, "unknown action")
