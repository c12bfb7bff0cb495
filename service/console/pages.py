"""Rendering console pages: autoescaped Jinja2 templates shipped in the package, and the headers
every page carries (the link page's strict CSP: no script at all, forms to this origin only)."""

from __future__ import annotations

import time
from typing import Any

from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from service.link_page import PAGE_HEADERS

__all__ = ["NAV", "page", "redirect"]

NAV = (
    ("/admin", "Overview"),
    ("/admin/conversations", "Conversations"),
    ("/admin/failures", "Failures"),
    ("/admin/accounts", "Accounts"),
    ("/admin/links", "Links"),
    ("/admin/usage", "Usage"),
    ("/admin/feedback", "Feedback"),
    ("/admin/mcp", "MCP"),
)

_env = Environment(
    loader=PackageLoader("service.console", "templates"),
    autoescape=select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts)) if ts else "—"


_env.filters["when"] = _when


def page(
    template: str,
    *,
    title: str,
    here: str = "",
    csrf: str = "",
    status: int = 200,
    headers: dict[str, str] | None = None,
    **values: Any,
) -> HTMLResponse:
    """A page with `no-store`, no referrer and the no-script CSP (an admin page may show a key
    or a user's data: never cached, never framed)."""
    body = _env.get_template(template).render(title=title, here=here, csrf=csrf, nav=NAV, **values)
    return HTMLResponse(body, status_code=status, headers={**PAGE_HEADERS, **(headers or {})})


def redirect(to: str) -> RedirectResponse:
    return RedirectResponse(to, status_code=303, headers=PAGE_HEADERS)
