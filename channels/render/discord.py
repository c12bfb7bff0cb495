"""Discord markdown: the reply's markdown passes through, re-written from the parse.

Literal markdown characters in text are backslash-escaped (outside URLs, where a backslash would
end up in the link), so text shows as written. Mentions are neutralised with a zero-width space
after the `@` or `#` (`@\u200beveryone`, `<@\u200b123>`, `<#\u200b123>`), in code too, so they
cannot ping even if `allowed_mentions` were misconfigured.
"""

from __future__ import annotations

import re

from channels.adapter import Markup
from channels.render.model import (
    PARAGRAPH,
    Frame,
    WrapKind,
    Wrapper,
    in_quote,
    split_fences,
)

__all__ = ["DISCORD_MARKDOWN", "DiscordMarkdown", "neutralise_mentions"]

_MARKS = {WrapKind.BOLD: "**", WrapKind.ITALIC: "_", WrapKind.STRIKE: "~~"}
_ESCAPES = str.maketrans({c: "\\" + c for c in "\\*_~`|[]"})
_URL = re.compile(r"https?://[^\s<>\"']+")
_MENTION = re.compile(r"@(?=everyone|here)|(?<=<)[@#](?=[!&]?\d)", re.IGNORECASE)
_LEAD_MARK = re.compile(r"^([ \t]*)([#>+-])")
_LEAD_NUMBER = re.compile(r"^([ \t]*\d+)([.)])")


def neutralise_mentions(text: str) -> str:
    return _MENTION.sub("\\g<0>\u200b", text) if ("@" in text or "#" in text) else text


def _escape(raw: str) -> str:
    if "://" not in raw:
        return raw.translate(_ESCAPES)
    out: list[str] = []
    pos = 0
    for match in _URL.finditer(raw):
        out.append(raw[pos : match.start()].translate(_ESCAPES))
        out.append(match.group())
        pos = match.end()
    out.append(raw[pos:].translate(_ESCAPES))
    return "".join(out)


class DiscordMarkdown:
    markup = Markup.DISCORD_MARKDOWN

    def open(self, wrapper: Wrapper) -> str:
        if wrapper.kind is WrapKind.PRE:
            return f"```{wrapper.lang}\n" + ("> " if wrapper.quoted else "")
        if wrapper.kind is WrapKind.QUOTE:
            return "> "
        if wrapper.kind is WrapKind.CODE:
            return "`" if wrapper.ticks == 1 else "`` "
        return _MARKS[wrapper.kind]

    def close(self, wrapper: Wrapper) -> str:
        if wrapper.kind is WrapKind.PRE:
            return "\n> ```" if wrapper.quoted else "\n```"
        if wrapper.kind is WrapKind.QUOTE:
            return ""
        if wrapper.kind is WrapKind.CODE:
            return "`" if wrapper.ticks == 1 else " ``"
        return _MARKS[wrapper.kind]

    def text(self, raw: str, *, code: bool, line_start: bool) -> str:
        if code:
            return neutralise_mentions(split_fences(raw))
        out = neutralise_mentions(_escape(raw))
        if line_start and out:
            out = _LEAD_NUMBER.sub(r"\1\\\2", _LEAD_MARK.sub(r"\1\\\2", out, count=1), count=1)
        return out

    def line_break(self, rank: int, frame: Frame) -> str:
        if in_quote(frame):
            return "\n> \n> " if rank == PARAGRAPH else "\n> "
        return "\n\n" if rank == PARAGRAPH else "\n"

    def link(self, label: str, url: str, shown: str) -> str:
        if url.startswith("mailto:"):  # Discord has no mail links; the address reads fine
            address = shown.removeprefix("mailto:")
            text = address if label in ("", address, shown) else f"{label} ({address})"
            return self.text(text, code=False, line_start=False)
        target = re.sub(r"@(?=everyone|here)", "%40", url, flags=re.IGNORECASE)
        target = target.replace("(", "%28").replace(")", "%29")
        if label in ("", shown, url):
            return f"<{target}>"  # the angle brackets keep Discord from adding an embed
        return f"[{self.text(label, code=False, line_start=False)}]({target})"

    def bullet(self, marker: str, depth: int) -> str:
        return f"{'  ' * depth}{'-' if marker == '•' else marker} "

    def heading(self, level: int) -> tuple[str, Wrapper | None]:
        if level <= 3:
            return "#" * level + " ", None
        return "", Wrapper(WrapKind.BOLD)

    def rule(self) -> str:
        return "———"


DISCORD_MARKDOWN = DiscordMarkdown()
