"""The form a reply takes between markdown-it tokens and platform text.

A reply becomes a flat list of `Piece`s. Each piece carries its `frame`: the formatting wrapped
around it, outermost first (a quote, a code block, bold, ...). Flat pieces with frames, rather than
a tree, are what let the chunker cut anywhere: it closes the frame at the cut and reopens it in the
next message, so every message is well-formed on its own (balanced Telegram tags, closed fences).

Each markup is a `Dialect` (render_slack.py, render_telegram.py, render_discord.py,
render_plain.py): how a frame opens and closes, how text is escaped, how a link or a line break
looks. The dialect never decides where to cut; chunking.py never decides how text looks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Protocol

from channels.adapter import Markup

__all__ = [
    "LINE",
    "PARAGRAPH",
    "Dialect",
    "Frame",
    "Piece",
    "PieceKind",
    "WrapKind",
    "Wrapper",
    "fence_plain",
    "has_scheme",
    "in_quote",
    "split_fences",
]

PARAGRAPH = 0  # break ranks: a lower rank is a better place to cut
LINE = 1


class WrapKind(StrEnum):
    BOLD = "bold"
    ITALIC = "italic"
    STRIKE = "strike"
    CODE = "code"  # inline code span
    PRE = "pre"  # fenced or indented code block
    QUOTE = "quote"


@dataclass(frozen=True, slots=True)
class Wrapper:
    """One layer of formatting. Block wrappers get a distinct `serial` so two adjacent code
    blocks (or quotes) never merge into one; inline wrappers compare equal by kind, so a bold run
    interrupted by a line break simply reopens."""

    kind: WrapKind
    lang: str = ""
    serial: int = 0
    ticks: int = 1  # backticks needed to delimit an inline code span in markdown dialects
    quoted: bool = False  # a code block inside a quote: its fence lines need the quote prefix


Frame = tuple[Wrapper, ...]


class PieceKind(IntEnum):
    TEXT = 0  # plain content the dialect escapes; may be cut anywhere
    ATOM = 1  # already-rendered markup that must stay whole (a link, a bullet)
    BREAK = 2  # a line or paragraph break; the preferred places to cut


@dataclass(frozen=True, slots=True)
class Piece:
    kind: PieceKind
    frame: Frame
    text: str = ""  # TEXT: unescaped content; ATOM: rendered markup
    plain: str = ""  # ATOM only: the same thing as plain text
    rank: int = PARAGRAPH  # BREAK only
    glue: bool = False  # ATOM that belongs to what follows it (bullets, heading marks)
    code: bool = False  # TEXT inside code: no markdown escaping, no mention neutralising


class Dialect(Protocol):
    markup: Markup

    def open(self, wrapper: Wrapper) -> str:
        """Markup that starts `wrapper` (e.g. `<b>`, ```` ```py\n ````)."""

    def close(self, wrapper: Wrapper) -> str:
        """Markup that ends `wrapper`."""

    def text(self, raw: str, *, code: bool, line_start: bool) -> str:
        """Escape `raw` for this markup. Must be per-character (escape(a + b) may differ from
        escape(a) + escape(b) only around a line start or a mention), so any prefix can be
        rendered on its own; `line_start` says the text begins a line of output."""

    def line_break(self, rank: int, frame: Frame) -> str:
        """A line (`LINE`) or paragraph (`PARAGRAPH`) break inside `frame`."""

    def link(self, label: str, url: str, shown: str) -> str:
        """A link to `url` (normalised and validated by markdown-it); `shown` is the same URL
        decoded for people to read. `label` equals `shown` for autolinks."""

    def bullet(self, marker: str, depth: int) -> str:
        """A list item's lead-in (`•` or `3.`), indented for nesting `depth` (0 = top level)."""

    def heading(self, level: int) -> tuple[str, Wrapper | None]:
        """A heading: a prefix atom (may be empty) and/or a wrapper around its text."""

    def rule(self) -> str:
        """A thematic break (`---`)."""


def fence_plain(wrapper: Wrapper, *, opening: bool) -> str:
    """The plain-text form of a code block's fence: kept in `Chunk.plain` so code still stands
    apart when Telegram falls back to plain text."""
    if wrapper.kind is not WrapKind.PRE:
        return ""
    return f"```{wrapper.lang}\n" if opening else "\n```"


_TRIPLE_TICKS = re.compile(r"``(?=`)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,31}:")


def split_fences(text: str) -> str:
    """Put a zero-width space into every run of three backticks, so literal backticks in a
    reply can never open or close a code fence in Slack or Discord (neither has an escape that
    works inside code)."""
    return _TRIPLE_TICKS.sub("``\u200b", text) if "```" in text else text


def in_quote(frame: Frame) -> bool:
    return any(w.kind is WrapKind.QUOTE for w in frame)


def has_scheme(url: str) -> bool:
    """Only `scheme:` URLs become links: a bare `!channel` or `@U1` destination would turn a
    Slack link into a mention."""
    return _SCHEME.match(url) is not None
