"""The console's MCP form is held to the admin API's nesting limit (issue 43, low 1): a change
nested far deeper than any MCP config is refused with a form error and never written, so it
cannot leave a file that every later MCP read fails on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from agent import McpConfigFile
from service.mcp_api import MAX_DEPTH
from storage import Keys
from tests.integration.service.console.test_console_http import ADMIN_KEY, _console

STORED = {"mcpServers": {"files": {"command": "python3", "args": ["server.py"]}}}


def _nested(levels: int) -> Any:
    """A JSON value `levels` containers deep: lists and objects in turn."""
    value: Any = "x"
    for n in range(levels):
        value = {"k": value} if n % 2 else [value]
    return value


async def test_a_200_deep_change_from_the_mcp_form_is_refused_and_reads_keep_working(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(STORED))
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async for console in _console(
        redis, keys, tmp_path, base_url="http://sb.test", mcp_file=McpConfigFile(path)
    ):
        await console.log_in()
        csrf = await console.csrf("/admin/mcp")
        for server in ({"env": {"A": _nested(200)}}, {"args": [_nested(200)]}):
            change = {"mcpServers": {"files": server}}
            refused = await console.http.post(
                "/admin/mcp", data={"csrf": csrf, "action": "change", "change": json.dumps(change)}
            )
            assert refused.status_code == 422, refused.text
            assert f"nested deeper than {MAX_DEPTH} levels" in refused.text
            assert json.loads(path.read_text()) == STORED
        page = await console.http.get("/admin/mcp")
        api = await console.http.get("/api/admin/mcp", headers=admin)
    assert page.status_code == 200 and "files" in page.text
    assert api.status_code == 200, api.text
    assert api.json()["config"] == STORED
