"""Markdown replies → platform messages: parse once with markdown-it, render per markup, chunk.

`render_chunks` is the one entry point the manager calls. The reply is parsed with markdown-it
(CommonMark + tables + strikethrough; raw HTML is not recognised, so `<b>` in a reply is text and
shows literally), walked into flat `Piece`s for the platform's dialect (render_model.py), and cut
into messages that each fit `caps.max_len` after escaping (chunking.py).

Markups: Slack mrkdwn (render_slack.py), Telegram HTML (render_telegram.py), Discord markdown
(render_discord.py), and plain text for the console (render_plain.py: markers stripped, links as
`label (url)`, code fences kept). Tables become aligned monospace blocks on every platform.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from channels.adapter import Capabilities, Chunk, Markup
from channels.render.chunking import MIN_LIMIT, pack
from channels.render.discord import DISCORD_MARKDOWN
from channels.render.model import (
    LINE,
    PARAGRAPH,
    Dialect,
    Frame,
    Piece,
    PieceKind,
    WrapKind,
    Wrapper,
    has_scheme,
)
from channels.render.plain import PLAIN
from channels.render.slack import SLACK_MRKDWN
from channels.render.telegram import TELEGRAM_HTML

__all__ = ["render_chunks", "render_pieces"]

_MD = (
    MarkdownIt("commonmark")
    .enable(["table", "strikethrough"])
    .disable(["html_inline", "html_block"])
)
_DIALECTS: dict[Markup, Dialect] = {
    Markup.SLACK_MRKDWN: SLACK_MRKDWN,
    Markup.TELEGRAM_HTML: TELEGRAM_HTML,
    Markup.DISCORD_MARKDOWN: DISCORD_MARKDOWN,
    Markup.PLAIN: PLAIN,
}
_INLINE_WRAPS = {
    "strong_open": WrapKind.BOLD,
    "em_open": WrapKind.ITALIC,
    "s_open": WrapKind.STRIKE,
}
_INLINE_CLOSES = {"strong_close", "em_close", "s_close"}
_LANG_JUNK = re.compile(r"[^\w+#.-]")


def render_chunks(markdown: str, caps: Capabilities) -> list[Chunk]:
    """The reply as messages in `caps.markup`, each within `caps.max_len` (`caps.len_unit`).

    Empty or blank input gives no chunks. Content is never dropped: a message is cut at a
    paragraph break, else a line break, a sentence end, a space, and only then mid-word; links
    and escapes are never split, and code blocks and formatting are closed at a cut and reopened
    in the next message.
    """
    if caps.max_len < MIN_LIMIT:
        raise ValueError(f"max_len must be at least {MIN_LIMIT}, got {caps.max_len}")
    if not markdown.strip():
        return []
    dialect = _DIALECTS[caps.markup]
    return pack(render_pieces(markdown, dialect), dialect, caps.max_len, caps.len_unit)


def render_pieces(markdown: str, dialect: Dialect) -> list[Piece]:
    """The reply as flat pieces for `dialect` (exposed for tests and benchmarks)."""
    builder = _Builder(dialect)
    builder.walk(_MD.parse(markdown))
    return builder.pieces


@dataclass(slots=True)
class _List:
    ordered: bool
    number: int
    tight: bool


class _Builder:
    """Walks the block tokens once, keeping the frame of open quotes/code blocks and inline
    styles; a break is only written when content follows it, so no piece list starts or ends
    with one."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.pieces: list[Piece] = []
        self.blocks: list[Wrapper] = []
        self.lists: list[_List] = []
        self.quote_pushed: list[bool] = []
        self.heading_wrap: Wrapper | None = None
        self.pending: int | None = None
        self.item_start = False
        self.serial = 0

    # -- output ---------------------------------------------------------------------------

    def request_break(self, rank: int) -> None:
        if self.item_start:
            return
        self.pending = rank if self.pending is None else min(self.pending, rank)

    def add(self, piece: Piece) -> None:
        if self.pending is not None:
            if self.pieces:
                frame = _common_blocks(self.pieces[-1].frame, piece.frame)
                self.pieces.append(Piece(PieceKind.BREAK, frame, rank=self.pending))
            self.pending = None
        if not piece.glue:
            self.item_start = False
        self.pieces.append(piece)

    def atom(self, text: str, plain: str, frame: Frame, *, glue: bool = False) -> None:
        self.add(Piece(PieceKind.ATOM, frame, text=text, plain=plain, glue=glue))

    def next_serial(self) -> int:
        self.serial += 1
        return self.serial

    # -- blocks ---------------------------------------------------------------------------

    def walk(self, tokens: Sequence[Token]) -> None:
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            kind = tok.type
            if kind == "inline":
                self.inline(tok.children or [])
            elif kind == "paragraph_open":
                self.request_break(LINE if tok.hidden else PARAGRAPH)
            elif kind == "heading_open":
                self.heading(tok)
            elif kind == "heading_close":
                self.heading_wrap = None
            elif kind in ("bullet_list_open", "ordered_list_open"):
                self.list_open(tokens, i)
            elif kind in ("bullet_list_close", "ordered_list_close"):
                self.lists.pop()
                self.request_break(PARAGRAPH)
            elif kind == "list_item_open":
                self.list_item()
            elif kind == "blockquote_open":
                self.request_break(PARAGRAPH)
                pushed = not any(w.kind is WrapKind.QUOTE for w in self.blocks)
                if pushed:
                    self.blocks.append(Wrapper(WrapKind.QUOTE, serial=self.next_serial()))
                self.quote_pushed.append(pushed)
            elif kind == "blockquote_close":
                if self.quote_pushed.pop():
                    self.blocks.pop()
                self.request_break(PARAGRAPH)
            elif kind in ("fence", "code_block"):
                lang = _LANG_JUNK.sub("", tok.info.split()[0])[:32] if tok.info.strip() else ""
                self.code_block(tok.content.removesuffix("\n").split("\n"), lang)
            elif kind == "hr":
                self.request_break(PARAGRAPH)
                rule = self.dialect.rule()
                self.atom(rule, PLAIN.rule(), tuple(self.blocks))
            elif kind == "table_open":
                i = self.table(tokens, i)
            i += 1

    def heading(self, tok: Token) -> None:
        self.request_break(PARAGRAPH)
        prefix, self.heading_wrap = self.dialect.heading(int(tok.tag[1:]))
        if prefix:
            self.atom(prefix, "", tuple(self.blocks), glue=True)

    def list_open(self, tokens: Sequence[Token], i: int) -> None:
        self.request_break(LINE if self.lists else PARAGRAPH)
        tok = tokens[i]
        start = tok.attrs.get("start", 1) if tok.type == "ordered_list_open" else 1
        nxt = tokens[i + 2] if i + 2 < len(tokens) else None
        tight = nxt is None or nxt.type != "paragraph_open" or nxt.hidden
        self.lists.append(_List(tok.type == "ordered_list_open", int(start or 1), tight))

    def list_item(self) -> None:
        state = self.lists[-1]
        self.request_break(LINE if state.tight else PARAGRAPH)
        marker = f"{state.number}." if state.ordered else "•"
        state.number += 1
        depth = len(self.lists) - 1
        frame = tuple(self.blocks)
        self.atom(self.dialect.bullet(marker, depth), PLAIN.bullet(marker, depth), frame, glue=True)
        self.item_start = True

    def code_block(self, lines: Sequence[str], lang: str) -> None:
        if not any(line.strip() for line in lines):
            return  # an empty block would be an empty (rejected) message on its own
        self.request_break(PARAGRAPH)
        quoted = any(w.kind is WrapKind.QUOTE for w in self.blocks)
        pre = Wrapper(WrapKind.PRE, lang=lang, serial=self.next_serial(), quoted=quoted)
        frame = (*self.blocks, pre)
        if not quoted:  # one piece: the chunker cuts at its newlines as line breaks
            self.add(Piece(PieceKind.TEXT, frame, text="\n".join(lines), code=True))
            return
        for n, line in enumerate(lines):  # quoted lines need the dialect's prefix on each
            if n:
                self.pieces.append(Piece(PieceKind.BREAK, frame, rank=LINE))
            self.add(Piece(PieceKind.TEXT, frame, text=line, code=True))

    def table(self, tokens: Sequence[Token], i: int) -> int:
        rows: list[list[str]] = []
        header_rows = 0
        while tokens[i].type != "table_close":
            tok = tokens[i]
            if tok.type == "tr_open":
                rows.append([])
            elif tok.type == "inline":
                rows[-1].append(_plain_inline(tok.children or []))
            elif tok.type == "thead_close":
                header_rows = len(rows)
            i += 1
        width = max(len(r) for r in rows)
        cols = [max((len(r[c]) for r in rows if c < len(r)), default=0) for c in range(width)]
        lines = [" | ".join(cell.ljust(cols[c]) for c, cell in enumerate(r)).rstrip() for r in rows]
        if header_rows:
            lines.insert(header_rows, "-+-".join("-" * max(w, 1) for w in cols))
        self.code_block(lines, "")
        return i

    # -- inline ---------------------------------------------------------------------------

    def inline(self, children: Sequence[Token]) -> None:
        base = (*self.blocks, self.heading_wrap) if self.heading_wrap else tuple(self.blocks)
        styles: list[Wrapper | None] = []
        frame = base
        i = 0
        while i < len(children):
            tok = children[i]
            kind = tok.type
            if kind == "text":
                if tok.content:
                    self.add(Piece(PieceKind.TEXT, frame, text=tok.content))
            elif kind in _INLINE_WRAPS:
                wrap = Wrapper(_INLINE_WRAPS[kind])
                styles.append(None if wrap in frame else wrap)
                frame = base + tuple(w for w in styles if w is not None)
            elif kind in _INLINE_CLOSES:
                if styles:
                    styles.pop()
                frame = base + tuple(w for w in styles if w is not None)
            elif kind in ("softbreak", "hardbreak"):
                self.add(Piece(PieceKind.BREAK, tuple(self.blocks), rank=LINE))
            elif kind == "code_inline":
                ticks = 2 if "`" in tok.content else 1
                code = Wrapper(WrapKind.CODE, serial=self.next_serial(), ticks=ticks)
                self.add(Piece(PieceKind.TEXT, (*frame, code), text=tok.content, code=True))
            elif kind == "link_open":
                end = _closing(children, i)
                self.link(_plain_inline(children[i + 1 : end]), tok.attrs.get("href", ""), frame)
                i = end
            elif kind == "image":
                label = _plain_inline(tok.children or []) or tok.content
                self.link(label, str(tok.attrs.get("src", "")), frame)
            elif tok.content:
                self.add(Piece(PieceKind.TEXT, frame, text=tok.content))
            i += 1

    def link(self, label: str, url: object, frame: Frame) -> None:
        url = str(url)
        if not url:
            if label:
                self.add(Piece(PieceKind.TEXT, frame, text=label))
            return
        shown = _MD.normalizeLinkText(url)
        label = label or shown
        plain = PLAIN.link(label, url, shown)
        if not has_scheme(url):
            self.add(Piece(PieceKind.TEXT, frame, text=plain))
            return
        self.atom(self.dialect.link(label, url, shown), plain, frame)


def _closing(children: Sequence[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(children)):
        if children[j].type == "link_open":
            depth += 1
        elif children[j].type == "link_close":
            depth -= 1
            if depth == 0:
                return j
    return len(children) - 1


def _plain_inline(children: Sequence[Token]) -> str:
    """Inline tokens as one line of plain text (link labels, table cells)."""
    out: list[str] = []
    for tok in children:
        if tok.type in ("text", "code_inline"):
            out.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif tok.type == "image":
            out.append(_plain_inline(tok.children or []) or tok.content)
    return "".join(out)


def _common_blocks(a: Frame, b: Frame) -> Frame:
    """The block wrappers (quotes, code blocks) two neighbouring pieces share: the frame a break
    between them lives in."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y or x.kind not in (WrapKind.QUOTE, WrapKind.PRE):
            break
        n += 1
    return a[:n]
