"""A tiny real MCP server over stdio (the `mcp` package's FastMCP), for the MCP tool tests.

Run as `python tests/fakes/mcp_server.py`. Its one tool, `vault_lookup(key)`, answers only when
the server was started with `FAKE_MCP_TOKEN` equal to `FAKE_MCP_EXPECTED` (both from its env):
so a right answer proves Switchboard resolved the `$VAR` in the config and handed the secret to
the server, while the answer itself never contains the secret.
"""

from __future__ import annotations

import os

from mcp.server.fastmcp import FastMCP

__all__ = ["server"]

server = FastMCP("fake-vault")


@server.tool()
def vault_lookup(key: str) -> str:
    """Look a key up in the vault."""
    token = os.environ.get("FAKE_MCP_TOKEN", "")
    if not token or token != os.environ.get("FAKE_MCP_EXPECTED", "-"):
        return "vault locked"
    return f"vault value of {key} is 42"


if __name__ == "__main__":
    server.run("stdio")
