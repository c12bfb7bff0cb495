"""`SWITCHBOARD_AGENT` parsed: which backend runs the agent, checked before anything starts.

| value                      | backend                                                  |
|----------------------------|----------------------------------------------------------|
| `builtin`                  | `create_agent` with the built-in and MCP tools           |
| `python:pkg.module:attr`   | your compiled LangGraph graph, or a zero-arg factory     |
| `http://…` / `https://…`   | a LangGraph server (`SWITCHBOARD_AGENT_ASSISTANT`)       |

A bad value is one `ConfigError` line naming `SWITCHBOARD_AGENT`, so start-up stops before the
service takes any message it could not answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from switchboard.errors import ConfigError

__all__ = ["AgentSpec", "parse_agent_spec"]

_TARGET = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
_EXPECTED = (
    "expected 'builtin', 'python:pkg.module:attr' or an http(s):// URL of a LangGraph server"
)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    kind: Literal["builtin", "python", "remote"]
    target: str = ""  # `pkg.module:attr` or the server URL

    def describe(self) -> str:
        """For logs and `/status`: the kind and the target (a URL without its credentials)."""
        if self.kind == "remote":
            parts = urlsplit(self.target)
            return f"remote {parts.scheme}://{parts.hostname or ''}" + (
                f":{parts.port}" if parts.port else ""
            )
        return f"python {self.target}" if self.kind == "python" else "builtin"


def parse_agent_spec(value: str) -> AgentSpec:
    raw = (value or "").strip()
    if raw.lower() in ("", "builtin"):
        return AgentSpec("builtin")
    if raw.startswith("python:"):
        target = raw.removeprefix("python:").strip()
        if not _TARGET.match(target):
            raise ConfigError(
                f"invalid setting SWITCHBOARD_AGENT: {_EXPECTED}; got a python: "
                "value that is not pkg.module:attr"
            )
        return AgentSpec("python", target)
    if raw.lower().startswith(("http://", "https://")):
        try:
            parts = urlsplit(raw)
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError:
            raise ConfigError(
                "invalid setting SWITCHBOARD_AGENT: the LangGraph server URL is malformed"
            ) from None
        if not parts.hostname:
            raise ConfigError("invalid setting SWITCHBOARD_AGENT: the server URL has no host")
        return AgentSpec("remote", raw.rstrip("/"))
    raise ConfigError(f"invalid setting SWITCHBOARD_AGENT: {_EXPECTED}")
