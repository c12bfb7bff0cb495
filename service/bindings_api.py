"""Admin HTTP API for bindings (admin key): read the rules in force, replace them for the fleet.

| method | path                   | does                                                          |
|--------|------------------------|---------------------------------------------------------------|
| GET    | `/api/admin/bindings`  | the rules in force (`version`, `source`, `rules`), masked      |
| PUT    | `/api/admin/bindings`  | `{"rules": [...]}`: validated (422 lists one line per problem), stored in Redis; every process takes them within seconds |

Values are shown masked like the MCP config (an agent URL's credentials, anything shaped like
a key); a masked value sent back unchanged keeps the stored one, so a read-edit-write cycle
never writes `***` into a rule. Without `SWITCHBOARD_BINDINGS` bindings are off: GET says so
and PUT is refused (409), since the service was started without a resolver on its hot path.

A PUT holds only the admin key, so an agent the operator's config does not name is held to
`agent.backends.policy` before anything is stored: a `python:` agent needs
`SWITCHBOARD_ADMIN_ALLOW_COMMANDS=on` and a remote one an approved host (403 otherwise), a module
in the data directory is never taken (403), and a `python:` agent must load in a probe
interpreter (422 otherwise: one that ends its interpreter ends only the probe's).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from fastapi import Body, Depends, FastAPI
from fastapi.responses import JSONResponse

from agent.backends import AgentPolicy, AgentRefused, probe_graph
from channels.bindings import Bindings, BindingsError, parse_bindings
from service.bindings_sync import API_ORIGIN, BindingsSync
from switchboard.masking import MASK, mask

__all__ = ["add_bindings_admin", "masked_view"]

_log = structlog.get_logger(__name__)


def masked_view(bindings: Bindings, *, version: int, enabled: bool = True) -> dict[str, Any]:
    return {
        "enabled": enabled,
        "version": version,
        "source": bindings.source,
        "rules": [mask(rule) for rule in bindings.to_doc()],
    }


def add_bindings_admin(
    app: FastAPI,
    *,
    sync: BindingsSync | None,
    admin: Callable[..., Awaitable[None]],
    responses: dict[int | str, dict[str, Any]],
) -> None:
    """`admin` is the app's admin-key dependency; it raises the app's own 401."""

    @app.get(
        "/api/admin/bindings", tags=["admin"], responses=responses, dependencies=[Depends(admin)]
    )
    async def bindings_get() -> dict[str, Any]:
        """The routing and channel-policy rules in force, masked."""
        if sync is None:
            return masked_view(Bindings(), version=0, enabled=False)
        return masked_view(sync.current, version=sync.version)

    @app.put(
        "/api/admin/bindings", tags=["admin"], responses=responses, dependencies=[Depends(admin)]
    )
    async def bindings_put(body: dict[str, Any] = Body(...)) -> Any:
        """Replace the rules for every process: `{"rules": [...]}`, each a flat mapping."""
        if sync is None:
            return _error(409, "bindings are off: start the service with SWITCHBOARD_BINDINGS")
        rules = body.get("rules")
        if not isinstance(rules, list):
            return _error(422, 'expected {"rules": [...]}: a list of rules')
        rules, kept_problems = _unmasked(rules, sync.current)
        try:
            bindings = parse_bindings(json.dumps(rules), source=API_ORIGIN, json_only=True)
        except BindingsError as exc:
            return _error(422, "invalid bindings", problems=kept_problems + exc.problems)
        if kept_problems:
            return _error(422, "invalid bindings", problems=kept_problems)
        refused = await _refused_agents(bindings, sync.policy, in_force=sync.current)
        if refused is not None:
            return refused
        version = await sync.put(bindings, origin=API_ORIGIN)
        return masked_view(sync.current, version=version)


async def _refused_agents(
    bindings: Bindings, policy: AgentPolicy, *, in_force: Bindings
) -> JSONResponse | None:
    """403 naming every agent only the operator may allow, else 422 naming every `python:`
    agent that does not load in a probe (those in force already were probed when they came)."""
    agents = [(r.position, str(v)) for r in bindings.rules for k, v in r.settings if k == "agent"]
    forbidden: list[str] = []
    for position, agent in agents:
        try:
            policy.check(agent)
        except AgentRefused as exc:
            forbidden.append(f"rule {position}: {exc}")
    if forbidden:
        _log.warning("bindings.put_refused", problems=forbidden)
        return _error(403, "agents the admin API may not set", problems=forbidden)
    probed: dict[str, str] = {  # agent -> why it does not load ("" when it does)
        a: "" for rule in in_force.to_doc() if isinstance(a := rule.get("agent"), str)
    }
    broken: list[str] = []
    for position, agent in agents:
        if not policy.needs_probe(agent):
            continue
        if agent not in probed:
            try:
                await probe_graph(agent.removeprefix("python:"))
                probed[agent] = ""
            except AgentRefused as exc:
                probed[agent] = str(exc)
        if probed[agent]:
            broken.append(f"rule {position}: {probed[agent]}")
    if broken:
        _log.warning("bindings.put_refused", problems=broken)
        return _error(422, "agents that do not load", problems=broken)
    return None


def _unmasked(rules: list[Any], current: Bindings) -> tuple[list[Any], list[str]]:
    """Masked values sent back as they were shown get their stored value again; a masked value
    that matches nothing stored is a problem (it would store `***`)."""
    shown: dict[tuple[str, str], Any] = {}
    for rule in current.to_doc():
        for key, value in rule.items():
            shown.setdefault((key, json.dumps(mask(value, key=key))), value)
    problems: list[str] = []
    out: list[Any] = []
    for position, rule in enumerate(rules, start=1):
        if not isinstance(rule, dict):
            out.append(rule)
            continue
        fixed: dict[str, Any] = {}
        for key, value in rule.items():
            if isinstance(value, str) and MASK in value:
                stored = shown.get((str(key), json.dumps(value)))
                if stored is None:
                    problems.append(
                        f"rule {position}: {key} holds a masked value ({MASK}) that "
                        "matches no stored one; send the full value"
                    )
                    continue
                value = stored
            fixed[str(key)] = value
        out.append(fixed)
    return out, problems


def _error(status: int, message: str, *, problems: list[str] | None = None) -> JSONResponse:
    content: dict[str, Any] = {"error": message}
    if problems:
        content["problems"] = problems
    return JSONResponse(content, status_code=status)
