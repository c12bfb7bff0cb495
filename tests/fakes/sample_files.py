"""Small real files for attachment tests: a PNG of any size (Pillow) and a one-page PDF with a
text layer (written by hand: pypdf reads PDFs but does not typeset text); and image bombs, PNGs
written by hand whose header claims more pixels than their bytes suggest."""

from __future__ import annotations

import io
import struct
import zlib

__all__ = ["bomb_png_bytes", "pdf_bytes", "png_bytes", "png_header_bytes"]


def png_bytes(width: int, height: int, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return out.getvalue()


def bomb_png_bytes(width: int, height: int) -> bytes:
    """A valid black RGB PNG of `width` x `height`: 13,000 x 13,000 is about 490 KB that decodes
    to over 500 MB. Compressed row by row, so this process never holds the decoded image
    (about 3 s of zlib for that size)."""
    packer = zlib.compressobj(9)
    row = b"\x00" * (1 + 3 * width)  # filter byte "none", then the pixels
    data = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    return _png(width, height, data)


def png_header_bytes(width: int, height: int) -> bytes:
    """A PNG whose header says `width` x `height` but whose pixel data is one byte: it opens,
    and any attempt to decode it fails."""
    return _png(width, height, zlib.compress(b"\x00"))


def _png(width: int, height: int, idat: bytes) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", idat)
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def pdf_bytes(text: str) -> bytes:
    """A valid one-page PDF whose text layer is `text` (ASCII, one line)."""
    safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    stream = f"BT /F1 12 Tf 72 720 Td ({safe}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
