"""The `/link/{token}` page: what is being linked, and a plain form to confirm it with an API key.

Plain HTML with inline CSS and no script, so it works in any browser and the page's CSP can forbid
scripts entirely. Every value shown is escaped; the token travels only in the form's action URL.
"""

from __future__ import annotations

import html
import time
from urllib.parse import quote

from storage import LinkKind, LinkToken

__all__ = ["PAGE_HEADERS", "confirm_page", "message_page"]

PAGE_HEADERS = {
    # The URL holds a secret token: never send it on as a Referer, never cache the page.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
}

_PLATFORM_NAMES = {"slack": "Slack", "discord": "Discord", "telegram": "Telegram"}

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem}
dt{font-weight:600}input{width:100%;padding:.5rem;box-sizing:border-box;margin:.4rem 0 1rem}
button{padding:.5rem 1.2rem}.error{color:#a00;font-weight:600}
"""


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · Switchboard</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )


def _what(token: LinkToken) -> str:
    platform = _PLATFORM_NAMES.get(token.platform, token.platform)
    if token.kind is LinkKind.SERVER:
        return f"{platform} workspace {token.target_name or token.target_id}"
    return f"{platform} DMs of {token.target_name or token.target_id}"


def confirm_page(token: LinkToken, *, error: str | None = None) -> str:
    expires = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(token.expires_at))
    action = f"/link/{quote(token.token, safe='')}"
    notice = f'<p class="error">{html.escape(error)}</p>' if error else ""
    body = (
        f"{notice}<p>Confirm to let Switchboard serve <strong>{html.escape(_what(token))}</strong>"
        " on behalf of your Switchboard account.</p><dl>"
        f"<dt>Platform</dt><dd>{html.escape(_PLATFORM_NAMES.get(token.platform, token.platform))}"
        f"</dd><dt>Kind</dt><dd>{html.escape(str(token.kind))} link</dd>"
        f"<dt>Requested by</dt><dd>{html.escape(token.user_name or token.user_id)}</dd>"
        f"<dt>Expires</dt><dd>{html.escape(expires)}</dd></dl>"
        f'<form method="post" action="{html.escape(action)}">'
        '<label for="api_key">Your Switchboard API key</label>'
        '<input id="api_key" name="api_key" type="password" autocomplete="off" required>'
        '<button type="submit">Link</button></form>'
    )
    return _page("Link to Switchboard", body)


def message_page(title: str, message: str) -> str:
    return _page(title, f"<p>{html.escape(message)}</p>")
