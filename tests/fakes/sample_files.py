"""Small real files for attachment tests: a PNG of any size (Pillow) and a one-page PDF with a
text layer (written by hand: pypdf reads PDFs but does not typeset text); and image bombs, PNGs
written by hand whose header claims more pixels than their bytes suggest; and CPU bombs: a
progressive JPEG whose costliest scan is repeated, a PDF whose pages share one font with a big
ToUnicode map (parsed again for every page), a WebP of one colour (tiny, decodes to
width x height x 4 bytes); and an Ogg Opus header of any duration."""

from __future__ import annotations

import io
import struct
import zlib

__all__ = [
    "bomb_png_bytes",
    "cmap_pdf_bytes",
    "ogg_opus_bytes",
    "pdf_bytes",
    "png_bytes",
    "png_header_bytes",
    "rescanned_jpeg_bytes",
    "webp_bytes",
]


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
    return _pdf(objects)


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1, object 1 the catalog) with its xref table."""
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


def webp_bytes(width: int, height: int) -> bytes:
    """A lossy WebP of one colour: about 70 KB at 6300 x 6300, 600 MB to decode (Pillow 13)."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (9, 9, 9)).save(out, format="WEBP", quality=50)
    return out.getvalue()


def rescanned_jpeg_bytes(width: int, height: int, repeats: int) -> bytes:
    """A progressive JPEG whose last scan (the luma AC refinement, 14 bytes here, a pass over
    every block) is repeated `repeats` more times: libjpeg warns and decodes each one again."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (90, 120, 200)).save(
        out, format="JPEG", progressive=True, quality=90
    )
    data = out.getvalue()
    start, end = _jpeg_scans(data)[-1]
    return data[:end] + data[start:end] * repeats + data[end:]


def _jpeg_scans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each SOS segment with its entropy-coded data."""
    scans = []
    offset = 2
    while offset < len(data) and data[offset + 1] != 0xD9:
        marker = data[offset + 1]
        (length,) = struct.unpack_from(">H", data, offset + 2)
        end = offset + 2 + length
        if marker == 0xDA:
            while True:  # to the next marker that is not a stuffed 0xFF00 or a restart marker
                end = data.index(b"\xff", end)
                if data[end + 1] == 0 or 0xD0 <= data[end + 1] <= 0xD7:
                    end += 2
                    continue
                break
            scans.append((offset, end))
        offset = end
    return scans


def cmap_pdf_bytes(pages: int, entries: int = 20_000) -> bytes:
    """A PDF of `pages` one-character pages sharing one Type0 font whose ToUnicode CMap maps
    `entries` codes: about 93 KB for 50 pages, and pypdf parses the map again on every page
    (0.1 s of CPU each here)."""
    lines = ["/CIDInit /ProcSet findresource begin", "12 dict begin", "begincmap"]
    lines.append("1 begincodespacerange <0000> <FFFF> endcodespacerange")
    for first in range(0, entries, 100):
        chunk = range(first, min(first + 100, entries))
        lines.append(f"{len(chunk)} beginbfchar")
        lines.extend(f"<{c:04X}> <{(0x4E00 + c) % 0xFFFF:04X}>" for c in chunk)
        lines.append("endbfchar")
    lines += ["endcmap", "CMapName currentdict /CMap defineresource pop", "end", "end"]
    cmap = zlib.compress("\n".join(lines).encode(), 9)
    content = b"BT /F1 12 Tf 72 720 Td <0041> Tj ET"
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        4: b"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H "
        b"/DescendantFonts [6 0 R] /ToUnicode 5 0 R >>",
        5: b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
        6: b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /X /CIDSystemInfo "
        b"<< /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 500 >>",
    }
    kids = list(range(7, 7 + pages))
    for number in kids:
        objects[number] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
            b"/Resources << /Font << /F1 4 0 R >> >> >>"
        )
    refs = b" ".join(b"%d 0 R" % k for k in kids)
    objects[2] = b"<< /Type /Pages /Kids [" + refs + b"] /Count %d >>" % pages
    return _pdf([objects[n] for n in sorted(objects)])


def ogg_opus_bytes(seconds: float, size: int = 4096) -> bytes:
    """An Ogg Opus stream's first page (OpusHead, pre-skip 312) and a last page whose granule
    position says `seconds`, padded to `size` bytes: what a duration check reads."""
    head = b"OpusHead" + bytes([1, 1]) + struct.pack("<HIhB", 312, 48_000, 0, 0)
    first = _ogg_page(head, granule=0, sequence=0, flags=2)
    last = _ogg_page(b"\x00" * 32, granule=312 + round(seconds * 48_000), sequence=1, flags=4)
    padding = max(0, size - len(first) - len(last))
    middle = _ogg_page(b"\x00" * min(padding, 255), granule=-1, sequence=1, flags=0)
    filler = middle * max(0, padding // len(middle))
    return first + filler + last


def _ogg_page(packet: bytes, *, granule: int, sequence: int, flags: int) -> bytes:
    header = b"OggS" + bytes([0, flags]) + struct.pack("<qIII", granule, 1, sequence, 0)
    return header + bytes([1, len(packet)]) + packet
