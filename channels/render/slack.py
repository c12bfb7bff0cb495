"""Slack mrkdwn: `*bold*`, `_italic_`, `~strike~`, `<url|text>`, and `&`/`<`/`>` always escaped.

Escaping `<` is what keeps `<!channel>`, `<!here>`, `<@U123>`, `<#C1>` and `<!subteam^…>` in the
model's text from becoming real mentions: Slack only parses them from a literal `<`. Slack has no
backslash escape, so literal `*` or `_` may still format; a run of three backticks gets a
zero-width space so it can never open a code block.
"""

from __future__ import annotations

from channels.adapter import Markup
from channels.render.model import (
    PARAGRAPH,
    Frame,
    WrapKind,
    Wrapper,
    in_quote,
    split_fences,
)

__all__ = ["SLACK_MRKDWN", "SlackMrkdwn"]

_MARKS = {
    WrapKind.BOLD: "*",
    WrapKind.ITALIC: "_",
    WrapKind.STRIKE: "~",
    WrapKind.CODE: "`",
}


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackMrkdwn:
    markup = Markup.SLACK_MRKDWN

    def open(self, wrapper: Wrapper) -> str:
        if wrapper.kind is WrapKind.PRE:
            # Slack shows a language tag as code, so there is none
            return "```\n> " if wrapper.quoted else "```\n"
        if wrapper.kind is WrapKind.QUOTE:
            return "> "
        if wrapper.kind is WrapKind.CODE and wrapper.ticks > 1:
            return "`\u200b"  # Slack cannot escape a backtick in code; keep it off the mark
        return _MARKS[wrapper.kind]

    def close(self, wrapper: Wrapper) -> str:
        if wrapper.kind is WrapKind.PRE:
            return "\n> ```" if wrapper.quoted else "\n```"
        if wrapper.kind is WrapKind.QUOTE:
            return ""
        if wrapper.kind is WrapKind.CODE and wrapper.ticks > 1:
            return "\u200b`"
        return _MARKS[wrapper.kind]

    def text(self, raw: str, *, code: bool, line_start: bool) -> str:
        return split_fences(_escape(raw))

    def line_break(self, rank: int, frame: Frame) -> str:
        if in_quote(frame):
            return "\n> \n> " if rank == PARAGRAPH else "\n> "
        return "\n\n" if rank == PARAGRAPH else "\n"

    def link(self, label: str, url: str, shown: str) -> str:
        target = _escape(url).replace("|", "%7C")
        if label in ("", url, shown):
            return f"<{target}>"
        return f"<{target}|{_escape(label)}>"

    def bullet(self, marker: str, depth: int) -> str:
        return f"{'    ' * depth}{marker} "

    def heading(self, level: int) -> tuple[str, Wrapper | None]:
        return "", Wrapper(WrapKind.BOLD)

    def rule(self) -> str:
        return "———"


SLACK_MRKDWN = SlackMrkdwn()
