"""Telegram HTML (parse_mode=HTML): only the tags Telegram accepts, everything else escaped.

Telegram rejects a whole message over one unknown tag or stray `&`, so text goes through
`html.escape` and the only markup we ever write is b, i, s, code, pre, a and blockquote.
"""

from __future__ import annotations

import html

from channels.adapter import Markup
from channels.render.model import PARAGRAPH, Frame, WrapKind, Wrapper

__all__ = ["TELEGRAM_HTML", "TelegramHtml"]

_TAGS = {
    WrapKind.BOLD: "b",
    WrapKind.ITALIC: "i",
    WrapKind.STRIKE: "s",
    WrapKind.CODE: "code",
    WrapKind.QUOTE: "blockquote",
}
# Telegram refuses links with other schemes (the whole message fails), so those stay text.
_LINK_SCHEMES = ("http:", "https:", "tg:", "mailto:", "ton:")


class TelegramHtml:
    markup = Markup.TELEGRAM_HTML

    def open(self, wrapper: Wrapper) -> str:
        if wrapper.kind is WrapKind.PRE:
            if wrapper.lang:
                return f'<pre><code class="language-{html.escape(wrapper.lang)}">'
            return "<pre>"
        return f"<{_TAGS[wrapper.kind]}>"

    def close(self, wrapper: Wrapper) -> str:
        if wrapper.kind is WrapKind.PRE:
            return "</code></pre>" if wrapper.lang else "</pre>"
        return f"</{_TAGS[wrapper.kind]}>"

    def text(self, raw: str, *, code: bool, line_start: bool) -> str:
        return html.escape(raw, quote=False)

    def line_break(self, rank: int, frame: Frame) -> str:
        return "\n\n" if rank == PARAGRAPH else "\n"

    def link(self, label: str, url: str, shown: str) -> str:
        if not url.lower().startswith(_LINK_SCHEMES):
            text = shown if label in ("", shown, url) else f"{label} ({shown})"
            return html.escape(text, quote=False)
        return f'<a href="{html.escape(url, quote=True)}">{html.escape(label, quote=False)}</a>'

    def bullet(self, marker: str, depth: int) -> str:
        return f"{'   ' * depth}{marker} "

    def heading(self, level: int) -> tuple[str, Wrapper | None]:
        return "", Wrapper(WrapKind.BOLD)

    def rule(self) -> str:
        return "———"


TELEGRAM_HTML = TelegramHtml()
