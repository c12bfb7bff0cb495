"""Files the user sent, as LangChain content blocks; files the agent made, out of its state.

In. Each file's type is sniffed from its bytes (`filetype`'s magic numbers, then "is it UTF-8
text?"), never taken from the name or the platform's claim, so a `.png` that is a PDF is read as
a PDF and an executable called `notes.txt` is only named. Then:

| sniffed as               | the model gets                                                      |
|--------------------------|---------------------------------------------------------------------|
| image (PNG, JPEG, GIF, WebP, BMP, TIFF) | a text line `[image: <name>, <W>x<H>]` + an `image` block (base64), downscaled with Pillow so the long side is at most `MAX_IMAGE_SIDE` px |
| image over `max_image_pixels` (width x height, read from the header) | only `[file: <name> (image, WxH): too large to look at …]`; never decoded |
| PDF                      | `[file: <name> (PDF, N pages)]` + its text (pypdf), capped          |
| UTF-8 text (no NULs)     | `[file: <name> (text/plain)]` + the text, capped                    |
| audio or video, transcribed (`agent.transcription`) | `[audio: <name>, transcribed]` + the transcript, capped |
| anything else, or unreadable | one line naming the file and saying it cannot be read           |

The user's own words come first, as the first text block; `split_content` undoes the layout (the
demo model and the lean-checkpoint rewrite use it).

Images and PDFs are the inputs whose cost is not bounded by their size: a 600 KB PNG can claim
13,000 x 13,000 pixels and take gigabytes to decode, a small progressive JPEG or PDF can take
minutes of CPU. So the header is read first and anything over `max_image_pixels` is refused
undecoded; a JPEG is decoded at the smallest scale libjpeg offers that still covers the target
(`Image.draft`), other formats are reduced by whole factors before resampling (`thumbnail`'s
`reducing_gap`); the rest of the bounds are `agent.decoding`'s. The service reads files with
`read_human_content` / `read_text_only`, which decode in the worker's pool of child processes
(`agent.decode_pool`: bounded in CPU and memory per worker, killed when the turn is cancelled);
a file too costly to read gets a note saying so, and the turn is answered. `content_blocks` and
`human_content` decode in the calling process, for callers that bound the work themselves. Names in notes are the user's (or a platform's) text:
`note_name` keeps them on one line, without brackets or control characters, so a file name
cannot close a note and write text the model would take for ours.

Lean checkpoints (`lean_messages`, run by `LeanAttachmentsMiddleware` once per turn, before the
agent's first model call): image blocks stay in the thread for the last `KEEP_IMAGE_TURNS` human
turns, and at most `MAX_THREAD_IMAGES` of them in the whole thread (newest kept); older ones are
replaced in place by one line `[image: <name>, WxH — no longer kept]`. File text older than
`KEEP_IMAGE_TURNS` turns is cut to `OLD_FILE_CHARS`. Files the agent sent (`send_file` artifacts,
base64) are dropped from its tool messages after the turn that sent them. So a thread's
checkpoint holds a bounded number of images whatever its length.

Out. A turn's files are the `send_file` artifacts of this turn's tool messages, plus the entries
of a custom graph's `files` state key (this turn's files only). An entry carries the bytes
(`{name, mime, data_b64}`) or, for a file on disk, a reference (`{name, mime, size, path}`, the
path inside the outbound-file directory, `agent.sandbox`): the checkpoint then holds a few
bytes instead of the file, which is read when the turn's files are collected for sending. Names
are reduced to a safe base name (`safe_file_name`). A reference the sandbox refuses at that read
(the file is gone, grew too large, or was swapped for a link since the tool call) is still a
file of the turn, with no bytes and why in plain words as its `note` (`refused_file`): the chat
is told which file did not come and why (`channels.manager.turns.files`), never left to wonder.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import filetype
import structlog
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from agent.decode_pool import DecodePool, shared
from agent.decoding import (
    MAX_IMAGE_PIXELS,
    MAX_IMAGE_SIDE,
    cap_text,
    image_blocks,
    pdf_block,
    text_block,
)
from agent.result import FileData
from agent.sandbox import FileRefused, read_inside

__all__ = [
    "FILES_STATE_KEY",
    "KEEP_IMAGE_TURNS",
    "MAX_FILE_CHARS",
    "MAX_IMAGE_PIXELS",
    "MAX_IMAGE_SIDE",
    "MAX_SEND_FILE_BYTES",
    "MAX_THREAD_IMAGES",
    "OLD_FILE_CHARS",
    "SEND_FILE_TOOL",
    "LeanAttachmentsMiddleware",
    "content_blocks",
    "file_entry",
    "file_reference",
    "human_content",
    "lean_messages",
    "load_turn_files",
    "note_name",
    "read_content_blocks",
    "read_human_content",
    "read_text_only",
    "refused_file",
    "safe_file_name",
    "sniff",
    "split_content",
    "text_only",
    "turn_file_entries",
    "turn_files",
]

MAX_SEND_FILE_BYTES = 50 * 1024 * 1024  # the largest any platform takes from a bot (Telegram)
_MAX_NAME_CHARS = 120  # a name in a note; longer ones are cut in the middle
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
_NAME_SWAPS = str.maketrans({"[": "(", "]": ")"})

_log = structlog.get_logger(__name__)


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


def content_blocks(
    file: FileData,
    *,
    max_chars: int = MAX_FILE_CHARS,
    max_image_pixels: int = MAX_IMAGE_PIXELS,
) -> list[dict[str, Any]]:
    """One file as content blocks (see the module table), images and PDFs decoded in this
    process; never raises for bad bytes. The type shown is the sniffed one: the platform's claim
    (`file.mime`) is never repeated to the model."""
    name = note_name(file.name)
    mime = sniff(file.data) if file.transcript is None else ""
    if mime in _IMAGE_MIMES:
        return image_blocks(name, file.data, max_image_pixels)
    if mime == "application/pdf":
        return [pdf_block(name, file.data, max_chars)]
    return [_cheap_block(name, mime, file, max_chars)]


async def read_content_blocks(
    file: FileData,
    *,
    max_chars: int = MAX_FILE_CHARS,
    max_image_pixels: int = MAX_IMAGE_PIXELS,
    pool: DecodePool | None = None,
) -> list[dict[str, Any]]:
    """`content_blocks`, with images and PDFs decoded in the decode pool (`pool`, else this
    event loop's shared one): bounded per worker, abandoned when the awaiting task is."""
    name = note_name(file.name)
    mime = sniff(file.data) if file.transcript is None else ""
    if mime in _IMAGE_MIMES:
        return await (pool or shared()).image(name, file.data, max_pixels=max_image_pixels)
    if mime == "application/pdf":
        return await (pool or shared()).pdf(name, file.data, max_chars=max_chars)
    return [_cheap_block(name, mime, file, max_chars)]


def _cheap_block(name: str, mime: str, file: FileData, max_chars: int) -> dict[str, Any]:
    """A transcript, a text file or a file only named: work bounded by the file's size."""
    if file.transcript is not None:
        return _text(f"[audio: {name}, transcribed]\n{_cap(file.transcript, max_chars)}")
    if mime == "text/plain":
        text = file.data.decode("utf-8", errors="replace")
        return _text(f"[file: {name} ({mime})]\n{_cap(text, max_chars)}")
    why = file.note or "not readable by me"
    return _text(f"[file: {name} ({mime}, {len(file.data):,} bytes): {why}]")


def human_content(
    text: str, files: Sequence[FileData], *, max_image_pixels: int = MAX_IMAGE_PIXELS
) -> str | list[str | dict[str, Any]]:
    """A HumanMessage's content: the text alone, or the text first and then each file's blocks."""
    if not files:
        return text
    blocks: list[str | dict[str, Any]] = [_text(text)] if text.strip() else []
    for file in files:
        blocks.extend(content_blocks(file, max_image_pixels=max_image_pixels))
    return blocks


def text_only(
    text: str, files: Sequence[FileData], *, max_image_pixels: int = MAX_IMAGE_PIXELS
) -> str:
    """The same as plain text (a clarification answer goes back as a tool result, which takes
    no image): images become their one-line note."""
    content = human_content(text, files, max_image_pixels=max_image_pixels)
    if isinstance(content, str):
        return content
    return _texts(content)


async def read_human_content(
    text: str,
    files: Sequence[FileData],
    *,
    max_image_pixels: int = MAX_IMAGE_PIXELS,
    pool: DecodePool | None = None,
) -> str | list[str | dict[str, Any]]:
    """`human_content` through the decode pool (`read_content_blocks`), the files concurrently
    (the pool bounds how many decode at once); cancelling it stops every decode."""
    if not files:
        return text
    blocks: list[str | dict[str, Any]] = [_text(text)] if text.strip() else []
    read = await asyncio.gather(
        *(read_content_blocks(f, max_image_pixels=max_image_pixels, pool=pool) for f in files)
    )
    for file_blocks in read:
        blocks.extend(file_blocks)
    return blocks


async def read_text_only(
    text: str,
    files: Sequence[FileData],
    *,
    max_image_pixels: int = MAX_IMAGE_PIXELS,
    pool: DecodePool | None = None,
) -> str:
    """`text_only` through the decode pool."""
    content = await read_human_content(text, files, max_image_pixels=max_image_pixels, pool=pool)
    return content if isinstance(content, str) else _texts(content)


def _texts(content: Sequence[str | dict[str, Any]]) -> str:
    parts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
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
            if not isinstance(block, dict):  # a bare string part: text, kept as it is
                blocks.append(block)
                continue
            kind = block.get("type")
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


class LeanAttachmentsMiddleware(AgentMiddleware):
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
    """An outgoing file that carries its bytes (small ones: text the model wrote)."""
    return {"name": name, "mime": mime, "data_b64": base64.b64encode(data).decode("ascii")}


def file_reference(name: str, mime: str, size: int, path: str) -> dict[str, str | int]:
    """An outgoing file on disk: `path` inside the outbound-file directory, read at send time,
    so the checkpoint that keeps this entry keeps no bytes."""
    return {"name": name, "mime": mime, "size": size, "path": path}


def safe_file_name(name: object, default: str = "file") -> str:
    """A base name fit to upload: no directories (either slash), no control characters, not
    `.`/`..`, at most 255 bytes; `default` when nothing is left."""
    text = "".join(c for c in str(name or "") if not _is_control(c))
    base = text.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if base in ("", ".", ".."):
        return default
    if len(base.encode("utf-8")) > 255:  # most file systems' limit, in bytes
        stem, dot, ext = base.rpartition(".")
        if not dot or len(ext) > 16:
            stem, dot, ext = base, "", ""
        budget = 255 - len(f"{dot}{ext}".encode())
        base = stem.encode("utf-8")[:budget].decode("utf-8", "ignore") + dot + ext
    return base


def note_name(name: object) -> str:
    """A file name as it appears inside a `[file: …]` note: one line, no brackets or control
    characters, at most `_MAX_NAME_CHARS` (cut in the middle, keeping the extension)."""
    text = "".join(" " if _is_control(c) else c for c in str(name or "")).translate(_NAME_SWAPS)
    text = " ".join(text.split())
    if len(text) > _MAX_NAME_CHARS:
        half = _MAX_NAME_CHARS // 2
        text = f"{text[: half - 1]}…{text[-half:]}"
    return text or "file"


def turn_files(output: Mapping[str, Any], files_dir: Path | None = None) -> tuple[FileData, ...]:
    """Files this turn produced (`turn_file_entries`), loaded (`load_turn_files`)."""
    return load_turn_files(turn_file_entries(output), files_dir)


def turn_file_entries(output: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """This turn's file entries, without reading any file: `send_file` artifacts after the
    last human message, then the graph's `files` state key."""
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
    return [entry for entry in entries if isinstance(entry, Mapping)]


def load_turn_files(
    entries: Sequence[Mapping[str, Any]], files_dir: Path | None = None
) -> tuple[FileData, ...]:
    """The entries as files: bytes decoded, references read inside `files_dir` (blocking I/O;
    call it off the event loop). A reference that cannot be read is a `refused_file`, so the
    user hears of it; a malformed entry (no bytes, no path) is skipped and logged. Never fatal
    to the reply."""
    files: list[FileData] = []
    for entry in entries:
        name = safe_file_name(entry.get("name"))
        try:
            data = _entry_bytes(entry, files_dir)
        except FileRefused as exc:
            _log.warning("file.reference_refused", reason=str(exc))
            files.append(refused_file(name, str(entry.get("mime") or ""), exc.reason))
            continue
        if data is None:
            _log.warning("file.entry_malformed")
            continue
        files.append(FileData(name=name, mime=str(entry.get("mime") or sniff(data)), data=data))
    return tuple(files)


def refused_file(name: str, mime: str, reason: str) -> FileData:
    """A file of the turn that will not be sent: no bytes, and `reason` (plain words for the
    user, e.g. "it no longer exists") as its note."""
    return FileData(name=name, mime=mime, data=b"", note=reason)


def _entry_bytes(entry: Mapping[str, Any], files_dir: Path | None) -> bytes | None:
    """The entry's bytes; None for a malformed one. Raises `FileRefused` for a reference."""
    path = entry.get("path")
    if isinstance(path, str) and "data_b64" not in entry:
        if files_dir is None:
            raise FileRefused("no files directory", "there is no files folder to send it from")
        return read_inside(files_dir, path, MAX_SEND_FILE_BYTES)
    try:
        return base64.b64decode(str(entry.get("data_b64") or ""), validate=True)
    except (binascii.Error, ValueError):
        return None


def _is_control(char: str) -> bool:
    """Control, format (bidi overrides), surrogate, private-use and unassigned characters, and
    line or paragraph separators: none belongs in a name shown on one line."""
    category = unicodedata.category(char)
    return category[0] == "C" or category in ("Zl", "Zp")


_text = text_block
_cap = cap_text


def _is_image_note(block: Any) -> bool:
    return isinstance(block, dict) and bool(_IMAGE_NOTE.match(str(block.get("text") or "")))
