"""Which agents a rule sent over HTTP may name, which code no agent may load, and which key a
remote agent is sent.

Operator config (`SWITCHBOARD_AGENT`, the bindings file) may name any agent: whoever writes it
can already run code on the host. The admin key alone must not become a shell on the host, nor a
way to send conversations (and the service's keys) to a host the operator never chose. So an
agent that is not in the operator's config, when it comes over HTTP (`PUT /api/admin/bindings`,
or rules stored by it):

- `python:` needs `SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on`, and is loaded once in a short-lived
  interpreter (`agent.backends.probe`) before this process imports it, so code that ends its
  interpreter (`os.abort`) is refused instead of taking the worker down;
- an `http(s)://` server must be on a host the operator configured: the host of
  `SWITCHBOARD_AGENT`, of an agent in the bindings file, or one of
  `SWITCHBOARD_ADMIN_AGENT_HOSTS`.

From any source, a `python:` module found under the data directory is refused: files land
there from chats and tools (`send_file`'s directory), and must never become code.

A remote agent is sent an API key only when the operator named one for its URL
(`SWITCHBOARD_AGENT_API_KEYS`); langgraph-sdk would otherwise send `LANGGRAPH_API_KEY`,
`LANGSMITH_API_KEY` or `LANGCHAIN_API_KEY` from the environment to any URL.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from switchboard.errors import ConfigError

__all__ = [
    "AgentPolicy",
    "AgentRefused",
    "agent_host",
    "api_key_for",
    "module_under",
    "refuse_data_dir_module",
    "url_identity",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class AgentRefused(ConfigError):
    """An agent this source may not name: `forbidden` (HTTP 403) when only the operator may
    allow it, otherwise it was tried and does not work (422)."""

    def __init__(self, message: str, *, forbidden: bool = True) -> None:
        super().__init__(message)
        self.forbidden = forbidden


def agent_host(url: str) -> str | None:
    """`host:port` of an agent URL (the scheme's port when none is given), lower case; None
    for a URL without a host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if not parts.hostname:
        return None
    host = parts.hostname.lower()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def url_identity(url: str) -> str | None:
    """Scheme, host, port and path of a URL, without credentials, query or trailing slash: what
    names one server for `SWITCHBOARD_AGENT_API_KEYS`."""
    host = agent_host(url)
    if host is None:
        return None
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{host}{parts.path.rstrip('/')}"


def api_key_for(
    url: str, named: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> str | None:
    """The key the operator named for `url` (`named`: URL -> variable name), read from the
    environment; None when none is named or the variable is empty."""
    identity = url_identity(url)
    env = os.environ if environ is None else environ
    for where, variable in named.items():
        if identity is not None and url_identity(where) == identity:
            return env.get(variable) or None
    return None


def module_under(module: str, directory: Path, search: Iterable[str] | None = None) -> bool:
    """Whether importing `module` (dotted) could load a file inside `directory`: some prefix
    of it (a parent package runs its `__init__` first) exists under it on the import path
    (the working directory included, as `load_graph` imports). Nothing is imported."""
    root = directory.resolve()
    parts = module.split(".")
    entries = [os.getcwd(), *(sys.path if search is None else search)]
    suffixes = ("", *importlib.machinery.all_suffixes())
    for entry in entries:
        base = Path(entry or os.getcwd())
        if not base.is_absolute():
            base = Path(os.getcwd()) / base
        for depth in range(1, len(parts) + 1):
            stem = base.joinpath(*parts[:depth])
            for suffix in suffixes:
                candidate = stem.with_name(stem.name + suffix)
                if candidate.exists() and _inside(candidate.resolve(), root):
                    return True
    return False


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def refuse_data_dir_module(target: str, data_dir: Path | None) -> None:
    """Raise `AgentRefused` when `pkg.module:attr` would be loaded from the data directory."""
    if data_dir is None:
        return
    module = target.partition(":")[0]
    if module_under(module, data_dir):
        raise AgentRefused(
            f"python:{target}: {module} is in the data directory (SWITCHBOARD_DATA_DIR), whose "
            "files come from chats and tools; agents are never loaded from there"
        )


@dataclass
class AgentPolicy:
    """What an agent named over HTTP may be. `allow_python` is
    `SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on`; `hosts` is `SWITCHBOARD_ADMIN_AGENT_HOSTS` (`host`
    for any port, or `host:port`); `default_agent` is `SWITCHBOARD_AGENT`, and the bindings
    file's agents are set with `file_agents()` (again on every reload)."""

    allow_python: bool = False
    hosts: frozenset[str] = frozenset()
    data_dir: Path | None = None
    default_agent: str = "builtin"
    _specs: frozenset[str] = field(default=frozenset(), init=False)
    _hosts: frozenset[str] = field(default=frozenset(), init=False)

    def __post_init__(self) -> None:
        self.file_agents(())

    def file_agents(self, agents: Iterable[str]) -> None:
        """The agents the operator's bindings file names: with `default_agent`, they need no
        permission, and their hosts are approved for remote agents."""
        named = (self.default_agent, *agents)
        specs = frozenset(a.strip().rstrip("/") for a in named if a and a.strip())
        self._specs = specs
        self._hosts = frozenset(
            h
            for h in (agent_host(s) for s in specs if s.lower().startswith(("http:", "https:")))
            if h
        )

    def is_operators(self, agent: str) -> bool:
        return agent.strip().rstrip("/") in self._specs

    def host_approved(self, url: str) -> bool:
        host = agent_host(url)
        if host is None:
            return False
        return host in self._hosts or host in self.hosts or host.rsplit(":", 1)[0] in self.hosts

    def check(self, agent: str) -> None:
        """Raise `AgentRefused` unless `agent`, named over HTTP, may be used. A `python:` one
        that passes still has to load in a probe (`agent.backends.probe`) before it is used."""
        text = agent.strip()
        if text.startswith("python:"):
            refuse_data_dir_module(text.removeprefix("python:"), self.data_dir)
        if not text or text.lower() == "builtin" or self.is_operators(text):
            return
        if text.startswith("python:"):
            if not self.allow_python:
                raise AgentRefused(
                    f"agent {text}: a python: agent set over HTTP runs code on this host; that "
                    "needs SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on (or put it in SWITCHBOARD_BINDINGS)"
                )
            return
        if text.lower().startswith(("http://", "https://")) and not self.host_approved(text):
            host = agent_host(text) or "(no host)"
            raise AgentRefused(
                f"agent URL on {host}: a remote agent set over HTTP must be on a host the "
                "operator configured (SWITCHBOARD_AGENT, SWITCHBOARD_BINDINGS or "
                "SWITCHBOARD_ADMIN_AGENT_HOSTS); it would receive every message"
            )

    def needs_probe(self, agent: str) -> bool:
        """Whether `agent` is code the operator did not write, to be loaded in a probe first."""
        return agent.strip().startswith("python:") and not self.is_operators(agent)
