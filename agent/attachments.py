"""Files the user sent, as LangChain content blocks; files the agent made, out of its state.

In. Each file's type is sniffed from its bytes (`filetype`'s magic numbers, then "is it UTF-8
text?"), never taken from the name or the platform's claim, so a `.png` that is a PDF is read as
a PDF and an executable called `notes.txt` is only named. Then:

| sniffed as               | the model gets                                                      |
|--------------------------|---------------------------------------------------------------------|
| image (PNG, JPEG, GIF, WebP, BMP, TIFF) | a text line `[image: <name>, <W>x<H>]` + an `image` block (base64), downscaled with Pillow so the long side is at most `MAX_IMAGE_SIDE` px |
| PDF                      | `[file: <name> (PDF, N pages)]` + its text (pypdf), capped          |
| UTF-8 text (no NULs)     | `[file: <name> (text/plain)]` + the text, capped                    |
| audio or video, transcribed (`agent.transcription`) | `[audio: <name>, transcribed]` + the transcript, capped |
| anything else, or unreadable | one line naming the file and saying it cannot be read           |

The user's own words come first, as the first text block; `split_content` undoes the layout (the
demo model and the lean-checkpoint rewrite use it).

Lean checkpoints (`lean_messages`, run by `LeanAttachmentsMiddleware` once per turn, before the
agent's first model call): image blocks stay in the thread for the last `KEEP_IMAGE_TURNS` human
turns, and at most `MAX_THREAD_IMAGES` of them in the whole thread (newest kept); older ones are
replaced in place by one line `[image: <name>, WxH — no longer kept]`. File text older than
`KEEP_IMAGE_TURNS` turns is cut to `OLD_FILE_CHARS`. Files the agent sent (`send_file` artifacts,
base64) are dropped from its tool messages after the turn that sent them. So a thread's
checkpoint holds a bounded number of images whatever its length.

Out. A turn's files are the `send_file` artifacts of this turn's tool messages, plus the entries
of a custom graph's `files` state key (`[{name, mime, data_b64}]`, this turn's files only).
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

import filetype
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from agent.result import FileData

__all__ = [
    "FILES_STATE_KEY",
    "KEEP_IMAGE_TURNS",
    "MAX_FILE_CHARS",
    "MAX_IMAGE_SIDE",
    "MAX_THREAD_IMAGES",
    "OLD_FILE_CHARS",
    "SEND_FILE_TOOL",
    "LeanAttachmentsMiddleware",
    "content_blocks",
    "file_entry",
    "human_content",
    "lean_messages",
    "sniff",
    "split_content",
    "text_only",
    "turn_files",
]

MAX_IMAGE_SIDE = 1568  # what vision models resize to anyway; more only costs tokens
MAX_FILE_CHARS = 20_000  # one file's text; a book would cost more than it helps
KEEP_IMAGE_TURNS = 3  # human turns an image stays visible to the model
MAX_THREAD_IMAGES = 8  # image blocks one thread's checkpoint holds at most
OLD_FILE_CHARS = 1_000  # what is left of a file's text once it is older than that
FILES_STATE_KEY = "files"
SEND_FILE_TOOL = "send_file"

_IMAGE_MIMES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/tiff"}
)
_NOTE = re.compile(r"^\[(image|file|audio): ")
_IMAGE_NOTE = re.compile(r"^\[image: (?P<name>.*), (?P<w>\d+)x(?P<h>\d+)\]$")
_DROPPED = " — no longer kept]"


def sniff(data: bytes) -> str:
    """The MIME type the bytes say they are: magic numbers, else UTF-8 text, else octet-stream."""
    kind = filetype.guess(data)
    if kind is not None:
        return str(kind.mime)
    if not data:
        return "text/plain"
    head = data[:4096]
    if b"\x00" in head:
        return "application/octet-stream"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the 4 KiB edge
            return "application/octet-stream"
    return "text/plain"


def content_blocks(file: FileData, *, max_chars: int = MAX_FILE_CHARS) -> list[dict[str, Any]]:
    """One file as content blocks (see the module table); never raises for bad bytes."""
    name = file.name or "file"
    if file.transcript is not None:
        return [_text(f"[audio: {name}, transcribed]\n{_cap(file.transcript, max_chars)}")]
    mime = sniff(file.data)
    if mime in _IMAGE_MIMES:
        return _image_blocks(name, file.data)
    if mime == "application/pdf":
        return [_pdf_block(name, file.data, max_chars)]
    if mime == "text/plain":
        text = file.data.decode("utf-8", errors="replace")
        return [_text(f"[file: {name} ({file.mime or 'text/plain'})]\n{_cap(text, max_chars)}")]
    return [_text(f"[file: {name} ({mime}, {len(file.data):,} bytes): not readable by me]")]


def human_content(text: str, files: Sequence[FileData]) -> str | list[dict[str, Any]]:
    """A HumanMessage's content: the text alone, or the text first and then each file's blocks."""
    if not files:
        return text
    blocks: list[dict[str, Any]] = [_text(text)] if text.strip() else []
    for file in files:
        blocks.extend(content_blocks(file))
    return blocks


def text_only(text: str, files: Sequence[FileData]) -> str:
    """The same as plain text (a clarification answer goes back as a tool result, which takes
    no image): images become their one-line note."""
    content = human_content(text, files)
    if isinstance(content, str):
        return content
    parts = [b["text"] for b in content if b.get("type") == "text"]
    return "\n\n".join(parts)


def split_content(content: str | list[Any]) -> tuple[str, list[str], int]:
    """(the user's own words, the attachment notes with their text, how many image blocks)."""
    if isinstance(content, str):
        return content, [], 0
    words: list[str] = []
    notes: list[str] = []
    images = 0
    for block in content:
        if isinstance(block, str):
            words.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            value = str(block.get("text") or "")
            (notes if _NOTE.match(value) else words).append(value)
        elif isinstance(block, dict) and block.get("type") in ("image", "image_url"):
            images += 1
    return "".join(words), notes, images


def lean_messages(
    messages: Sequence[BaseMessage],
    *,
    keep_turns: int = KEEP_IMAGE_TURNS,
    max_images: int = MAX_THREAD_IMAGES,
) -> list[BaseMessage]:
    """The messages to rewrite (same ids, so LangGraph's `add_messages` replaces them in place)
    for the policy in the module docstring; [] when the thread is already lean."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    recent = set(humans[-keep_turns:]) if keep_turns > 0 else set()
    last_human = humans[-1] if humans else len(messages)
    kept = 0
    changed: dict[int, BaseMessage] = {}
    for index in reversed(range(len(messages))):
        message = messages[index]
        if isinstance(message, ToolMessage) and index < last_human and message.artifact:
            if message.name == SEND_FILE_TOOL and message.id:
                changed[index] = message.model_copy(update={"artifact": None})
            continue
        if not isinstance(message, HumanMessage) or isinstance(message.content, str):
            continue
        young = index in recent
        blocks: list[Any] = []
        dirty = False
        for block in message.content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in ("image", "image_url"):
                if young and kept < max_images:
                    kept += 1
                    blocks.append(block)
                else:
                    dirty = True
                    if blocks and _is_image_note(blocks[-1]):
                        blocks[-1] = _text(blocks[-1]["text"][:-1] + _DROPPED)
                    else:
                        blocks.append(_text("[image:" + _DROPPED))
                continue
            if (
                not young
                and kind == "text"
                and _NOTE.match(str(block.get("text")))
                and len(str(block.get("text"))) > OLD_FILE_CHARS + 200
            ):
                dirty = True
                blocks.append(_text(_cap(str(block["text"]), OLD_FILE_CHARS)))
                continue
            blocks.append(block)
        if dirty and message.id:
            changed[index] = message.model_copy(update={"content": blocks})
    return [changed[i] for i in sorted(changed)]


class LeanAttachmentsMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Applies `lean_messages` once per turn, before the agent starts (not per model call, so a
    tool loop pays nothing): the rewrite lands in the turn's one checkpoint write."""

    def __init__(
        self, *, keep_turns: int = KEEP_IMAGE_TURNS, max_images: int = MAX_THREAD_IMAGES
    ) -> None:
        super().__init__()
        self._keep = keep_turns
        self._max = max_images

    @property
    def name(self) -> str:
        return "switchboard_lean_attachments"

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        rewritten = lean_messages(
            state.get("messages") or (), keep_turns=self._keep, max_images=self._max
        )
        return {"messages": rewritten} if rewritten else None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)


def file_entry(name: str, mime: str, data: bytes) -> dict[str, str]:
    """The agreed shape of an outgoing file in state and tool artifacts."""
    return {"name": name, "mime": mime, "data_b64": base64.b64encode(data).decode("ascii")}


def turn_files(output: Mapping[str, Any]) -> tuple[FileData, ...]:
    """Files this turn produced: `send_file` artifacts after the last human message, then the
    graph's `files` state key. Malformed entries are skipped, never fatal to the reply."""
    entries: list[Any] = []
    messages = list(output.get("messages") or ())
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        tool_file = isinstance(message, ToolMessage) and message.name == SEND_FILE_TOOL
        if tool_file and isinstance(message.artifact, Mapping):
            entries.insert(0, message.artifact)
    state_files = output.get(FILES_STATE_KEY)
    if isinstance(state_files, list | tuple):
        entries.extend(state_files)
    files: list[FileData] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        try:
            data = base64.b64decode(str(entry.get("data_b64") or ""), validate=True)
        except (binascii.Error, ValueError):
            continue
        name = str(entry.get("name") or "file")
        files.append(FileData(name=name, mime=str(entry.get("mime") or sniff(data)), data=data))
    return tuple(files)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… cut: {len(text) - limit:,} more characters]"


def _is_image_note(block: Any) -> bool:
    return isinstance(block, dict) and bool(_IMAGE_NOTE.match(str(block.get("text") or "")))


def _image_blocks(name: str, data: bytes) -> list[dict[str, Any]]:
    from PIL import Image, UnidentifiedImageError  # Pillow loads lazily: most turns have none

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            width, height = image.size
            fmt = "PNG" if image.mode in ("RGBA", "LA", "P") else "JPEG"
            if max(width, height) > MAX_IMAGE_SIDE or image.format not in ("PNG", "JPEG"):
                image.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
                converted = image.convert("RGBA" if fmt == "PNG" else "RGB")
                out = io.BytesIO()
                converted.save(out, format=fmt, quality=85)
                data = out.getvalue()
                width, height = converted.size
            else:
                fmt = image.format
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return [_text(f"[file: {name} (image): could not be decoded]")]
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return [
        _text(f"[image: {name}, {width}x{height}]"),
        {"type": "image", "base64": base64.b64encode(data).decode("ascii"), "mime_type": mime},
    ]


def _pdf_block(name: str, data: bytes, max_chars: int) -> dict[str, Any]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = len(reader.pages)
        parts: list[str] = []
        size = 0
        for page in reader.pages:
            part = page.extract_text() or ""
            parts.append(part)
            size += len(part)
            if size > max_chars:
                break
        text = "\n".join(p.strip() for p in parts if p.strip())
    except (PyPdfError, ValueError, KeyError, OSError):
        return _text(f"[file: {name} (PDF): could not be read]")
    if not text:
        return _text(f"[file: {name} (PDF, {pages} pages): no text layer (a scan?)]")
    return _text(f"[file: {name} (PDF, {pages} pages)]\n{_cap(text, max_chars)}")
