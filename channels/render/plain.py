"""Plain text: the console's markup and every chunk's `plain` fallback.

Emphasis, headings and quotes lose their markers, links read `label (url)`, bullets are `•`, and
code blocks keep their ```` ``` ```` fences so code still stands apart from prose. Nothing is
escaped. Every construct is at most as long as its Telegram HTML form, so a Telegram chunk's
`plain` always fits wherever its `text` does.
"""

from __future__ import annotations

from channels.adapter import Markup
from channels.render.model import PARAGRAPH, Frame, Wrapper, fence_plain

__all__ = ["PLAIN", "PlainText"]


class PlainText:
    markup = Markup.PLAIN

    def open(self, wrapper: Wrapper) -> str:
        return fence_plain(wrapper, opening=True)

    def close(self, wrapper: Wrapper) -> str:
        return fence_plain(wrapper, opening=False)

    def text(self, raw: str, *, code: bool, line_start: bool) -> str:
        return raw

    def line_break(self, rank: int, frame: Frame) -> str:
        return "\n\n" if rank == PARAGRAPH else "\n"

    def link(self, label: str, url: str, shown: str) -> str:
        if label in ("", shown, url, shown.removeprefix("mailto:")):
            return label or shown
        return f"{label} ({shown})"

    def bullet(self, marker: str, depth: int) -> str:
        return f"{'   ' * depth}{marker} "

    def heading(self, level: int) -> tuple[str, Wrapper | None]:
        return "", None

    def rule(self) -> str:
        return "———"


PLAIN = PlainText()
