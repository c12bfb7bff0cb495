"""Cutting rendered pieces into platform messages that each fit the limit after escaping.

The limit applies to the text as sent, so lengths are measured on rendered, escaped text in the
platform's unit (`chars`, or `utf16` code units where an emoji counts 2). A message is filled
greedily; when the next piece does not fit, the cut goes at the best place seen so far in this
order: paragraph break, line break, sentence end, space, and only then anywhere (between pieces or
mid-word, but never inside an emoji sequence, an escape, a tag or a link). A better kind
of place wins only if it keeps the message at least half full, so a heading early on does not
become a message of its own.

At the cut the open frame is closed (`</b>`, a code fence) and the next message reopens it,
language included, so every message is well-formed on its own. Each message's plain text is
built alongside from the same pieces.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import NamedTuple

from channels.adapter import Chunk
from channels.render.model import (
    PARAGRAPH,
    Dialect,
    Frame,
    Piece,
    PieceKind,
    fence_plain,
)

__all__ = ["MIN_LIMIT", "measure_fn", "pack"]

MIN_LIMIT = 16  # below this, one escaped character plus a reopened fence may not fit

_PLAIN_BREAK = {PARAGRAPH: "\n\n"}
_SENTENCE_END_REVERSED = re.compile(r"\s[)\"'\]»”’]*[.!?…]|[。！？]")
_JOINERS = {"\u200d", "\ufe0e", "\ufe0f", "\u20e3"}

Measure = Callable[[str], int]


def _utf16_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def measure_fn(unit: str) -> Measure:
    """Length in the platform's unit: `chars` (code points) or `utf16` (code units)."""
    return len if unit == "chars" else _utf16_len


def pack(pieces: Sequence[Piece], dialect: Dialect, limit: int, unit: str) -> list[Chunk]:
    """`pieces` as messages of at most `limit` (in `unit`) once rendered by `dialect`."""
    if not pieces:
        return []
    measure = measure_fn(unit)
    # Escaping only ever adds, so the raw lengths bound the rendered length from below.
    if sum(len(p.text) for p in pieces) <= limit:
        whole = _Out(dialect, measure)
        for piece in pieces:
            whole.put_piece(piece, piece.text)
        chunk = whole.finish()
        if measure(chunk.text) <= limit:
            return [chunk]
    return _Packer(list(pieces), dialect, limit, measure).run()


Snapshot = tuple[int, int, Frame, int, bool, bool]


class _Out:
    """One message being written: text and plain parts, the open frame and the length so far.
    A snapshot is cheap (list lengths), so the packer can back up to an earlier cut."""

    __slots__ = ("dialect", "frame", "length", "line_start", "measure", "plain", "started", "text")

    def __init__(self, dialect: Dialect, measure: Measure) -> None:
        self.dialect = dialect
        self.measure = measure
        self.text: list[str] = []
        self.plain: list[str] = []
        self.frame: Frame = ()
        self.length = 0
        self.line_start = True
        self.started = False

    def snapshot(self) -> Snapshot:
        return (
            len(self.text),
            len(self.plain),
            self.frame,
            self.length,
            self.line_start,
            self.started,
        )

    def restore(self, snap: Snapshot) -> None:
        del self.text[snap[0] :]
        del self.plain[snap[1] :]
        self.frame, self.length, self.line_start, self.started = snap[2:]

    def move(self, frame: Frame) -> None:
        """Close the wrappers `frame` does not share with the open one, then open its own."""
        current = self.frame
        if current == frame:
            return
        shared = _shared(current, frame)
        d = self.dialect
        for wrapper in reversed(current[shared:]):
            self._put(d.close(wrapper), fence_plain(wrapper, opening=False))
        for wrapper in frame[shared:]:
            self._put(d.open(wrapper), fence_plain(wrapper, opening=True))
        self.frame = frame

    def put_piece(self, piece: Piece, raw: str) -> None:
        """Write `piece` (for text: its part `raw`) after moving into its frame."""
        self.move(piece.frame)
        if piece.kind is PieceKind.TEXT:
            rendered = self.dialect.text(raw, code=piece.code, line_start=self.line_start)
            self._put(rendered, raw)
            self.line_start = self.line_start and not raw
        elif piece.kind is PieceKind.ATOM:
            self._put(piece.text, piece.plain)
            self.line_start = piece.glue
        else:
            self._put(
                self.dialect.line_break(piece.rank, piece.frame),
                _PLAIN_BREAK.get(piece.rank, "\n"),
            )
            self.line_start = True
            return
        self.started = True

    def _put(self, text: str, plain: str) -> None:
        self.text.append(text)
        self.plain.append(plain)
        self.length += self.measure(text)

    def finish(self) -> Chunk:
        self.move(())
        return Chunk("".join(self.text), "".join(self.plain))


class _Cut(NamedTuple):
    """A place the current message could end: restore `snap`, write `piece[start:end]` if the
    cut is inside a text piece, close the frame; the next message starts at `resume`."""

    snap: Snapshot
    resume: tuple[int, int]
    piece: int = -1
    start: int = 0
    end: int = 0


class _Region(NamedTuple):
    """A text piece written whole or in part (`raw[:k]`) into the current message, kept so the
    packer can look for sentence ends and spaces in it only when a cut is needed."""

    snap: Snapshot
    piece: int
    off: int
    raw: str
    k: int


class _Packer:
    def __init__(self, pieces: list[Piece], dialect: Dialect, limit: int, measure: Measure):
        self.pieces = pieces
        self.dialect = dialect
        self.limit = limit
        self.measure = measure
        self._close_costs: dict[Frame, int] = {}

    def run(self) -> list[Chunk]:
        chunks: list[Chunk] = []
        pos = (0, 0)
        while True:
            pos = self._skip_breaks(pos)
            if pos[0] >= len(self.pieces):
                return chunks
            chunk, pos = self._one(pos)
            if chunk is not None:
                chunks.append(chunk)

    def _skip_breaks(self, pos: tuple[int, int]) -> tuple[int, int]:
        i, off = pos
        while i < len(self.pieces):
            piece = self.pieces[i]
            if piece.kind is PieceKind.TEXT and not piece.code:
                off = _skip_spaces(piece.text, off)  # no message starts with a space
            if piece.kind is PieceKind.BREAK or (off and off >= len(piece.text)):
                i, off = i + 1, 0
            else:
                break
        return i, off

    # -- lengths --------------------------------------------------------------------------

    def _close_cost(self, frame: Frame) -> int:
        cost = self._close_costs.get(frame)
        if cost is None:
            cost = sum(self.measure(self.dialect.close(w)) for w in frame)
            self._close_costs[frame] = cost
        return cost

    def _move_cost(self, current: Frame, frame: Frame) -> int:
        if current == frame:
            return 0
        shared = _shared(current, frame)
        d, measure = self.dialect, self.measure
        return sum(measure(d.close(w)) for w in current[shared:]) + sum(
            measure(d.open(w)) for w in frame[shared:]
        )

    def _alone_cost(self, piece: Piece) -> int:
        """The length of a message holding only `piece`."""
        return (
            self._move_cost((), piece.frame)
            + self.measure(piece.text)
            + self._close_cost(piece.frame)
        )

    def _cut_length(self, cut: _Cut) -> int:
        length, frame, line_start = cut.snap[3], cut.snap[2], cut.snap[4]
        if cut.piece < 0:
            return length + self._close_cost(frame)
        piece = self.pieces[cut.piece]
        rendered = self.dialect.text(
            piece.text[cut.start : cut.end], code=piece.code, line_start=line_start
        )
        return (
            length
            + self._move_cost(frame, piece.frame)
            + self.measure(rendered)
            + self._close_cost(piece.frame)
        )

    # -- one message ----------------------------------------------------------------------

    def _one(self, pos: tuple[int, int]) -> tuple[Chunk | None, tuple[int, int]]:
        out = _Out(self.dialect, self.measure)
        best: list[_Cut | None] = [None, None, None, None]  # latest cut per rank 0..3
        regions: list[_Region] = []
        boundary: _Cut | None = None  # latest cut between two pieces (rank 4)
        after_glue = False
        i, off = pos
        pieces, limit, measure = self.pieces, self.limit, self.measure
        while i < len(pieces):
            piece = pieces[i]
            if piece.kind is PieceKind.BREAK:
                if out.started:
                    best[piece.rank] = _Cut(out.snapshot(), (i + 1, 0))
                out.put_piece(piece, "")
                i += 1
                continue
            if out.started and not after_glue:
                boundary = _Cut(out.snapshot(), (i, off))
            fixed = out.length + self._move_cost(out.frame, piece.frame)
            fixed += self._close_cost(piece.frame)
            if piece.kind is PieceKind.ATOM:
                if fixed + measure(piece.text) <= limit:
                    out.put_piece(piece, "")
                    after_glue = piece.glue
                    i += 1
                    continue
                if self._alone_cost(piece) > limit:  # never fits whole: show its plain text
                    pieces[i] = Piece(PieceKind.TEXT, piece.frame, text=piece.plain)
                    continue
                here = boundary or _Cut(out.snapshot(), (i, off))
                return self._finish(out, self._choose(best, regions, here))
            raw = piece.text[off:] if off else piece.text
            rendered = self.dialect.text(raw, code=piece.code, line_start=out.line_start)
            room = limit - fixed
            if measure(rendered) <= room:
                regions.append(_Region(out.snapshot(), i, off, raw, len(raw)))
                out.put_piece(piece, raw)
                after_glue = False
                i, off = i + 1, 0
                continue
            k = self._fit(raw, rendered, piece.code, out.line_start, room)
            regions.append(_Region(out.snapshot(), i, off, raw, k))
            if k > 0:
                boundary = _Cut(out.snapshot(), (i, off + k), i, off, off + k)
            elif not out.started:
                return self._degraded(i, off, raw)
            elif boundary is None:  # only a glued bullet so far: end the message after it
                boundary = _Cut(out.snapshot(), (i, off))
            return self._finish(out, self._choose(best, regions, boundary))
        return out.finish(), (i, off)

    def _inside(self, regions: list[_Region]) -> list[_Cut | None]:
        """The last cut of each rank inside the text written so far: a blank line and a
        newline (only code has them inside a piece), a sentence end, a space."""
        found: list[_Cut | None] = [None, None, None, None]
        for snap, i, off, raw, k in reversed(regions):
            head = raw[:k]
            for rank in range(4):
                if found[rank] is None:
                    found[rank] = self._last(rank, snap, i, off, raw, head)
            if all(cut is not None for cut in found):
                break
        return found

    @staticmethod
    def _last(rank: int, snap: Snapshot, i: int, off: int, raw: str, head: str) -> _Cut | None:
        if rank <= 1:
            at = head.rfind("\n\n" if rank == 0 else "\n")
            end, resume = at, at + 1
            while resume < len(raw) and raw[resume] == "\n":
                resume += 1
        elif rank == 2:
            match = _SENTENCE_END_REVERSED.search(head[::-1])
            if match is None:
                return None
            at = len(head) - 1 - match.start()
            end, resume = (at, _skip_spaces(raw, at)) if head[at].isspace() else (at + 1,) * 2
        else:
            end = max(head.rfind(" "), head.rfind("\t"))
            resume = _skip_spaces(raw, max(end, 0))
        if end <= 0 or not (snap[5] or head[:end].strip()):
            return None  # nothing would be written before this cut
        return _Cut(snap, (i, off + resume), i, off, off + end)

    def _choose(
        self, best: list[_Cut | None], regions: list[_Region], boundary: _Cut | None
    ) -> _Cut:
        for rank, cut in enumerate(self._inside(regions)):
            held = best[rank]
            if cut is not None and (held is None or cut.resume > held.resume):
                best[rank] = cut
        half = self.limit // 2
        for cut in best:
            if cut is not None and self._cut_length(cut) >= half:
                return cut
        found = [cut for cut in best if cut is not None]
        if found:
            return max(found, key=lambda cut: cut.resume)
        assert boundary is not None  # the caller records one whenever the message has content
        return boundary

    def _finish(self, out: _Out, cut: _Cut) -> tuple[Chunk, tuple[int, int]]:
        out.restore(cut.snap)
        if cut.piece >= 0:
            piece = self.pieces[cut.piece]
            out.put_piece(piece, piece.text[cut.start : cut.end])
        return out.finish(), cut.resume

    def _fit(self, raw: str, rendered: str, code: bool, line_start: bool, room: int) -> int:
        """The longest prefix of `raw` whose rendering fits `room`, not ending inside an emoji
        sequence or before a combining mark."""
        if room <= 0:
            return 0
        measure = self.measure
        if rendered == raw and measure(raw) == len(raw):
            k = room
        else:
            lo, hi = 0, len(raw)  # raw[:lo] fits, raw[:hi] does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                text = self.dialect.text(raw[:mid], code=code, line_start=line_start)
                if measure(text) <= room:
                    lo = mid
                else:
                    hi = mid
            k = lo
        safe = k
        while safe > 0 and _joins(raw, safe):
            safe -= 1
        return safe or k

    def _degraded(self, i: int, off: int, raw: str) -> tuple[Chunk | None, tuple[int, int]]:
        """Not even one character fits inside its frame (a tiny limit): write some of it
        unformatted, up to a newline if there is one."""
        piece = self.pieces[i]
        bare = Piece(PieceKind.TEXT, (), text=raw, code=piece.code)
        rendered = self.dialect.text(raw, code=piece.code, line_start=True)
        if self.measure(rendered) <= self.limit:
            k = len(raw)
        else:
            k = max(1, self._fit(raw, rendered, piece.code, True, self.limit))
            newline = raw.rfind("\n", 0, k)
            k = newline if newline > 0 else k
        resume = k
        while resume < len(raw) and raw[resume] == "\n":
            resume += 1
        if not raw[:k].strip():
            return None, (i, off + resume) if resume < len(raw) else (i + 1, 0)
        out = _Out(self.dialect, self.measure)
        out.put_piece(bare, raw[:k])
        return out.finish(), (i, off + resume)


def _shared(a: Frame, b: Frame) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _skip_spaces(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


def _joins(text: str, k: int) -> bool:
    """Whether a cut before `text[k]` would split a character from what modifies it."""
    nxt, prev = text[k], text[k - 1]
    return (
        nxt in _JOINERS
        or prev == "\u200d"
        or "\U0001f3fb" <= nxt <= "\U0001f3ff"
        or unicodedata.combining(nxt) != 0
    )
