"""Decoding images and PDFs for the model, and the decode child that runs it (`agent.decode_pool`).

Why a module of its own: this is the one place a small hostile file costs more than its size (a
WebP of 70 KB decodes to 600 MB, a progressive JPEG's repeated scans or a PDF whose font map is
parsed again per page burn CPU for minutes). It imports only the standard library, Pillow and
pypdf, so `python -m agent.decoding` starts a child that holds no LangChain and no event loop,
and the pool can kill it when a turn is cancelled or a limit passes.

What bounds the work, before any decode:
- an image's pixel count from its header (`max_pixels`), and its decode cost in bytes
  (`ImageJob.cost`, from the header: the pool reserves it from the worker's byte budget);
- a PNG whose compressed data is too short for the pixels it claims (deflate expands at most
  about 1,032 times) is refused as damaged instead of allocated;
- a JPEG with more than `MAX_JPEG_SCANS` scans (counted from its SOS markers) is refused;
- a PDF is read for at most `MAX_PDF_PAGES` pages and `max_chars` characters.
And during it, in the child: a CPU-time limit per file (a profiling timer, the kernel kills the
child past it) and an address-space limit (`RLIMIT_AS`) of the budget.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import resource
import signal
import struct
import sys
from typing import IO, Any

__all__ = [
    "MAX_IMAGE_PIXELS",
    "MAX_IMAGE_SIDE",
    "MAX_JPEG_SCANS",
    "MAX_PDF_PAGES",
    "ImageJob",
    "cap_text",
    "costly_note",
    "image_blocks",
    "pdf_block",
    "read_frame",
    "serve",
    "text_block",
    "write_frame",
]

MAX_IMAGE_SIDE = 1568  # what vision models resize to anyway; more only costs tokens
# Decoding costs up to 4 bytes a pixel (twice that while an RGBA image is resampled): 40 Mpx is
# any real camera's photo, and at most ~300 MB for a moment, not the gigabytes of a crafted one.
MAX_IMAGE_PIXELS = 40_000_000
MAX_JPEG_SCANS = 100  # encoders write 1 (baseline) to about 20 (mozjpeg); each scan is a pass
MAX_PDF_PAGES = 100  # pages whose text is read; a page can cost a font map's parse
_DEFLATE_MAX_RATIO = 1100  # deflate's ceiling is about 1,032 : 1; a little slack
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # by colour type
_AS_SLACK = 96 * 1024 * 1024  # a decoder's own buffers and the interpreter's growth


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def cap_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… cut: {len(text) - limit:,} more characters]"


def costly_note(name: str, kind: str, why: str) -> dict[str, Any]:
    """The note a file too costly to read gets: the model reads it and answers the turn."""
    return text_block(
        f"[file: {name} ({kind}): too costly to read ({why}); ask for a smaller copy]"
    )


class ImageJob:
    """One image opened from its header: `note` when it is answered without decoding, else
    `cost` (bytes the decode may take at its peak) and `blocks()` to decode it."""

    def __init__(self, name: str, data: bytes, max_pixels: int) -> None:
        from PIL import Image, UnidentifiedImageError  # Pillow loads lazily: most turns have none

        self.name = name
        self._data = data
        self.note: dict[str, Any] | None = None
        # Why it was refused, for the worker's log (the child has none): {"reason", ...}.
        self.refusal: dict[str, Any] | None = None
        self.cost = 0
        self.size = ""
        self._image: Any = None
        self._fmt = "JPEG"
        try:
            image = Image.open(io.BytesIO(data))  # reads the header only
        except Image.DecompressionBombError:  # Pillow's own guard, past any limit we allow
            self.note = _refused_image(name, max_pixels)
            return
        except (UnidentifiedImageError, OSError, ValueError, EOFError, SyntaxError):
            self.note = _undecodable(name)
            return
        width, height = image.size
        self.size = f"{width}x{height}"
        self.note = self._refusal(image, max_pixels)
        if self.note is not None:
            image.close()
            return
        self._fmt = "PNG" if image.mode in ("RGBA", "LA", "P") else "JPEG"
        if max(width, height) > MAX_IMAGE_SIDE or image.format not in ("PNG", "JPEG"):
            full = (width, height)
            # JPEG: libjpeg decodes at 1/2, 1/4 or 1/8 scale, never below the target.
            image.draft(None, fit_size(width, height, MAX_IMAGE_SIDE))
            self.cost = _decode_cost(image, full)
        self._image = image

    def _refusal(self, image: Any, max_pixels: int) -> dict[str, Any] | None:
        width, height = image.size
        if width * height > max_pixels:
            self.refusal = {
                "reason": "pixels",
                "width": width,
                "height": height,
                "limit": max_pixels,
            }
            return _refused_image(self.name, max_pixels, self.size)
        if image.format == "PNG" and _png_too_short(self._data, width, height):
            self.refusal = {"reason": "damaged", "width": width, "height": height}
            return text_block(f"[file: {self.name} (image, {self.size}): damaged, cannot be read]")
        if image.format == "JPEG":
            scans = self._data.count(b"\xff\xda")  # SOS; 0xFF in entropy data is stuffed
            if scans > MAX_JPEG_SCANS:
                self.refusal = {"reason": "scans", "width": width, "height": height, "scans": scans}
                return costly_note(self.name, f"image, {self.size}", f"{scans:,} JPEG scans")
        return None

    def blocks(self) -> list[dict[str, Any]]:
        """Decode (when needed) and downscale: the note and the image block; never raises for
        bad bytes (MemoryError aside: past the address-space limit, the caller's to handle)."""
        from PIL import Image, UnidentifiedImageError

        if self.note is not None:
            return [self.note]
        image = self._image
        data = self._data
        fmt = self._fmt
        width, height = image.size
        try:
            with image:
                if self.cost:
                    # Others: decoded whole, then reduced by whole factors before resampling.
                    image.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE), reducing_gap=2.0)
                    converted = image.convert("RGBA" if fmt == "PNG" else "RGB")
                    out = io.BytesIO()
                    converted.save(out, format=fmt, quality=85)
                    data = out.getvalue()
                    width, height = converted.size
                else:
                    fmt = image.format
        except Image.DecompressionBombError:
            return [_refused_image(self.name, MAX_IMAGE_PIXELS)]
        except (UnidentifiedImageError, OSError, ValueError, EOFError, SyntaxError):
            return [_undecodable(self.name)]
        mime = "image/png" if fmt == "PNG" else "image/jpeg"
        return [
            text_block(f"[image: {self.name}, {width}x{height}]"),
            {"type": "image", "base64": base64.b64encode(data).decode("ascii"), "mime_type": mime},
        ]

    def close(self) -> None:
        if self._image is not None:
            self._image.close()


def image_blocks(name: str, data: bytes, max_pixels: int) -> list[dict[str, Any]]:
    """An image's blocks, decoded in this process (no pool: the caller bounds the cost)."""
    return ImageJob(name, data, max_pixels).blocks()


def fit_size(width: int, height: int, side: int) -> tuple[int, int]:
    """(width, height) scaled so the long side is at most `side`, aspect kept."""
    scale = min(1.0, side / max(width, height, 1))
    return max(1, round(width * scale)), max(1, round(height * scale))


def pdf_block(
    name: str, data: bytes, max_chars: int, max_pages: int = MAX_PDF_PAGES
) -> dict[str, Any]:
    """A PDF's text: at most `max_pages` pages, stopping once `max_chars` are read."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = len(reader.pages)
        parts: list[str] = []
        size = 0
        read = 0
        for page in reader.pages:
            if read >= max_pages or size > max_chars:
                break
            part = page.extract_text() or ""
            read += 1
            parts.append(part)
            size += len(part)
        text = "\n".join(p.strip() for p in parts if p.strip())
    except (PyPdfError, ValueError, KeyError, OSError, RecursionError):
        return text_block(f"[file: {name} (PDF): could not be read]")
    kind = f"PDF, {pages} pages"
    if read < pages and size <= max_chars:
        kind += f", the first {read} read"
    if not text:
        return text_block(f"[file: {name} ({kind}): no text layer (a scan?)]")
    return text_block(f"[file: {name} ({kind})]\n{cap_text(text, max_chars)}")


def _decode_cost(image: Any, full: tuple[int, int]) -> int:
    """Bytes a decode takes at its peak, from the header (measured on Pillow 13: a WebP holds
    libwebp's canvas, its copy and the resampled one; a progressive JPEG keeps every 16-bit
    coefficient of the full-size image whatever the draft scale)."""
    width, height = (int(side) for side in image.size)
    if image.format == "JPEG":
        layers = int(image.layers) if image.info.get("progressive") else 0
        return full[0] * full[1] * 2 * layers + width * height * 4 * 2
    factor = 4 if image.format == "WEBP" else 2
    return width * height * 4 * factor


def _png_too_short(data: bytes, width: int, height: int) -> bool:
    """Whether the PNG's image data is too short to hold the pixels its header claims."""
    if len(data) < 33:
        return True
    depth, colour, interlace = data[24], data[25], data[28]
    row = math.ceil(width * depth * _PNG_CHANNELS.get(colour, 4) / 8)
    raw = height * (row + 1) * (2 if interlace else 1)
    compressed = 0
    offset = 8
    while offset + 8 <= len(data):
        (length,) = struct.unpack_from(">I", data, offset)
        if data[offset + 4 : offset + 8] == b"IDAT":
            compressed += length
        offset += 12 + length
    return raw > compressed * _DEFLATE_MAX_RATIO + 4096


def _refused_image(name: str, max_pixels: int, size: str = "") -> dict[str, Any]:
    kind = f"image, {size}" if size else "image"
    return text_block(
        f"[file: {name} ({kind}): too large to look at (over {max_pixels:,} pixels); "
        "ask for a smaller copy]"
    )


def _undecodable(name: str) -> dict[str, Any]:
    return text_block(f"[file: {name} (image): could not be decoded]")


# The child's side of the pool's protocol. A frame is a 4-byte big-endian length and that many
# bytes of JSON; a request's `size` bytes of file follow it. Parent → child: {"op": "image" |
# "pdf", "name", "size", "cpu_s", "max_pixels" | "max_chars"}; child → parent: {"need": bytes,
# "size": "WxH"} when an image must reserve its decode cost (parent → child: {"go": bool}), then
# {"blocks": [...], "refusal": {...} | null} (an image refused from its header, for the worker to
# log), or {"error": "memory"} before the child exits.


def write_frame(out: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    out.write(struct.pack(">I", len(body)) + body)
    out.flush()


def read_frame(inp: IO[bytes]) -> dict[str, Any] | None:
    head = inp.read(4)
    if len(head) < 4:
        return None
    (length,) = struct.unpack(">I", head)
    message: dict[str, Any] = json.loads(inp.read(length))
    return message


def serve(memory_bytes: int) -> None:
    """The decode child's loop: one request at a time until stdin closes (the worker exited)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a library's stray print cannot corrupt a frame
    inp = sys.stdin.buffer
    from PIL import Image  # pypdf (and its 40 MB of cryptography) loads with the first PDF

    Image.init()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would otherwise dump core
    if vm_size := _vm_size():  # Linux; elsewhere only the CPU limit and the budget hold
        _set_soft(resource.RLIMIT_AS, vm_size + memory_bytes + _AS_SLACK)
    while (request := read_frame(inp)) is not None:
        data = inp.read(int(request["size"]))
        _limit_cpu(float(request["cpu_s"]))
        try:
            reply = _answer(request, data, inp, out)
        except MemoryError:
            write_frame(out, {"error": "memory"})
            return
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)  # idle until the next request
        if reply is not None:
            write_frame(out, reply)


def _answer(
    request: dict[str, Any], data: bytes, inp: IO[bytes], out: IO[bytes]
) -> dict[str, Any] | None:
    name = str(request["name"])
    if request["op"] == "pdf":
        return {"blocks": [pdf_block(name, data, int(request["max_chars"]))]}
    job = ImageJob(name, data, int(request["max_pixels"]))
    if job.cost:
        write_frame(out, {"need": job.cost, "size": job.size})
        answer = read_frame(inp)
        if not answer or not answer.get("go"):
            job.close()
            return None  # the parent answers with its own note
    return {"blocks": job.blocks(), "refusal": job.refusal}


def _limit_cpu(seconds: float) -> None:
    """This request may use `seconds` of CPU: a profiling timer (CPU time of this process, to
    the tick) sends SIGPROF, whose default is to terminate, once it has. `RLIMIT_CPU` counts
    whole seconds of the process's life, so alone it granted up to a second more than asked
    (what the imports had used, rounded up); it stays as a backstop a second later."""
    signal.setitimer(signal.ITIMER_PROF, seconds)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _set_soft(resource.RLIMIT_CPU, math.ceil(usage.ru_utime + usage.ru_stime + seconds) + 1)


def _set_soft(kind: int, soft: int) -> None:
    """Lower (or raise again, up to the hard limit) one soft limit of this process."""
    _, hard = resource.getrlimit(kind)
    resource.setrlimit(kind, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


if __name__ == "__main__":
    serve(int(sys.argv[1]))
