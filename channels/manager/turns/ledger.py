"""A batch's answer as recorded before its first send: what the reply ledger holds.

The answer is kept as the pieces the chat will see, already rendered (reply chunks, the question
with its id, the files), with the run id and the run's model calls for the budget. A holder that
takes the batch again (after a crash, a lost lock, a Redis error) decodes it and sends only the
pieces that have no receipt; it never asks the model again. Pure: no I/O, unit-tested alone.

Files are recorded by name and type; their bytes travel in the record only while small
(`INLINE_FILE_BYTES`), so Redis never holds a large upload. A larger file that a crash left
unsent is named in a short notice instead.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from agent.result import FileData, ModelCall, TurnResult, TurnUsage
from channels.adapter import Chunk
from switchboard.state import PendingQuestion

__all__ = ["INLINE_FILE_BYTES", "CorruptRecord", "Piece", "TurnRecord"]

INLINE_FILE_BYTES = 256 * 1024  # a chart or a short document; bigger files are not copied


class CorruptRecord(ValueError):
    """A ledger this release cannot read (a newer or damaged record)."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One thing the chat is sent: a reply chunk, the question, or a file."""

    kind: Literal["chunk", "question", "file"]
    chunk: Chunk | None = None  # chunk: the rendered message
    question: PendingQuestion | None = None  # question: as stored for the thread
    chunks: tuple[Chunk, ...] = ()  # question: its rendered text
    file: FileData | None = None  # file: data may be empty when it was too big to record
    file_size: int = 0


@dataclass(frozen=True, slots=True)
class TurnRecord:
    entries: tuple[str, ...]  # the batch it answers (queue entry ids)
    run_id: str = ""
    pieces: tuple[Piece, ...] = ()
    answered_question: str = ""  # the question this batch answered (dropped at finish)
    usage: TurnUsage = field(default_factory=TurnUsage)
    refusal: bool = False  # the batch was refused, not run: said as a reply to its message

    def charge(self) -> TurnResult | None:
        """What the budget is charged for (idempotent per run id), or None for no run."""
        if not self.run_id:
            return None
        return TurnResult(reply_text="", run_id=self.run_id, usage=self.usage)

    def encode(self) -> bytes:
        doc: dict[str, Any] = {
            "v": 1,
            "entries": list(self.entries),
            "run": self.run_id,
            "answered": self.answered_question,
            "usage": [asdict(c) for c in self.usage.calls],
            "pieces": [_piece_doc(p) for p in self.pieces],
        }
        if self.refusal:
            doc["refusal"] = True
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> TurnRecord:
        try:
            doc = json.loads(raw)
            if doc.get("v") != 1:
                raise ValueError("unknown ledger version")
            return cls(
                entries=tuple(str(e) for e in doc["entries"]),
                run_id=str(doc.get("run", "")),
                pieces=tuple(_piece(p) for p in doc["pieces"]),
                answered_question=str(doc.get("answered", "")),
                usage=TurnUsage(tuple(ModelCall(**c) for c in doc.get("usage", ()))),
                refusal=bool(doc.get("refusal", False)),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptRecord(f"unreadable reply ledger ({exc.__class__.__name__})") from None


def _chunk_doc(chunk: Chunk) -> list[str]:
    return [chunk.text, chunk.plain]


def _chunk(doc: list[str]) -> Chunk:
    text, plain = doc
    return Chunk(text=str(text), plain=str(plain))


def _piece_doc(piece: Piece) -> dict[str, Any]:
    if piece.kind == "chunk":
        assert piece.chunk is not None
        return {"k": "chunk", "c": _chunk_doc(piece.chunk)}
    if piece.kind == "question":
        assert piece.question is not None
        return {
            "k": "question",
            "q": json.loads(piece.question.to_json()),
            "c": [_chunk_doc(c) for c in piece.chunks],
        }
    assert piece.file is not None
    data = piece.file.data if len(piece.file.data) <= INLINE_FILE_BYTES else b""
    doc: dict[str, Any] = {
        "k": "file",
        "name": piece.file.name,
        "mime": piece.file.mime,
        "size": piece.file_size or len(piece.file.data),
        "data": base64.b64encode(data).decode() if data else None,
    }
    if piece.file.note:  # a file refused before sending: why, for the line the chat gets
        doc["note"] = piece.file.note
    return doc


def _piece(doc: dict[str, Any]) -> Piece:
    kind = doc["k"]
    if kind == "chunk":
        return Piece("chunk", chunk=_chunk(doc["c"]))
    if kind == "question":
        question = PendingQuestion.from_json(json.dumps(doc["q"]))
        return Piece("question", question=question, chunks=tuple(_chunk(c) for c in doc["c"]))
    if kind == "file":
        data = base64.b64decode(doc["data"]) if doc.get("data") else b""
        note = str(doc.get("note") or "")
        file = FileData(name=str(doc["name"]), mime=str(doc["mime"]), data=data, note=note)
        return Piece("file", file=file, file_size=int(doc.get("size", len(data))))
    raise ValueError(f"unknown piece {kind!r}")
