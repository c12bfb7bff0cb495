"""The decode pool with its real child processes (`python -m agent.decoding`): hostile files are
abandoned with a note once they pass a bound (CPU per file, the worker's byte budget, a JPEG's
scan count, a PNG's data too short for its size), a cancelled decode kills its child, and
concurrent decodes share one budget. CPU is measured as the children's own rusage, reaped."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.attachments import read_human_content
from agent.decode_pool import DecodeLimits, DecodePool
from agent.result import FileData
from tests.fakes.sample_files import (
    cmap_pdf_bytes,
    png_bytes,
    png_header_bytes,
    rescanned_jpeg_bytes,
    webp_bytes,
)
from tests.support import wait_until

MB = 1024 * 1024


@pytest.fixture
async def pool() -> AsyncIterator[DecodePool]:
    decoder = DecodePool(DecodeLimits(workers=2, memory_bytes=256 * MB, cpu_s=1))
    try:
        yield decoder
    finally:
        await decoder.aclose()


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime, stime in clock ticks


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _status_mb(pid: int, field: str = "VmHWM") -> int:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except FileNotFoundError:
        return 0
    for line in lines:
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) // 1024
    return 0


async def _sum_rss_peak(pool: DecodePool, done: asyncio.Event) -> int:
    """The largest sum of the children's resident memory seen, sampled until `done`."""
    peak = 0
    while not done.is_set():
        peak = max(peak, sum(_status_mb(pid, "VmRSS") for pid in pool.child_pids()))
        await asyncio.sleep(0.005)
    return peak


async def test_a_pdf_that_takes_more_cpu_than_allowed_is_abandoned_with_a_note(
    pool: DecodePool,
) -> None:
    bomb = cmap_pdf_bytes(100)  # about 10 s of pypdf unbounded
    before = _children_cpu_s()
    [note] = await pool.pdf("fonts.pdf", bomb, max_chars=20_000)
    await pool.aclose()  # reaps every child, so their CPU is in RUSAGE_CHILDREN
    spent = _children_cpu_s() - before
    assert note["text"] == (
        "[file: fonts.pdf (PDF): too costly to read (over 1 s of work); ask for a smaller copy]"
    )
    # The child's start and imports, the 1 s it was allowed and the limit's rounding up.
    assert spent < 4, spent


async def test_a_progressive_jpeg_with_repeated_scans_is_refused_before_decoding(
    pool: DecodePool,
) -> None:
    bomb = rescanned_jpeg_bytes(2000, 2000, 3000)  # 66 KB, about 10 s to decode
    [note] = await pool.image("scans.jpg", bomb, max_pixels=40_000_000)
    assert note["text"] == (
        "[file: scans.jpg (image, 2000x2000): too costly to read (3,010 JPEG scans); "
        "ask for a smaller copy]"
    )


async def test_a_progressive_jpeg_under_the_scan_bound_is_still_bounded_by_cpu(
    pool: DecodePool,
) -> None:
    bomb = rescanned_jpeg_bytes(5500, 5500, 90)  # 100 scans, MAX_JPEG_SCANS: 3 s of work
    [note] = await pool.image("scans.jpg", bomb, max_pixels=40_000_000)
    assert note["text"] == (
        "[file: scans.jpg (image): too costly to read (over 1 s of work); ask for a smaller copy]"
    )


async def test_a_tiny_png_that_claims_6300_square_is_refused_without_decoding(
    pool: DecodePool,
) -> None:
    bomb = png_header_bytes(6300, 6300)
    assert len(bomb) < 110
    [note] = await pool.image("tiny.png", bomb, max_pixels=40_000_000)
    assert note["text"] == "[file: tiny.png (image, 6300x6300): damaged, cannot be read]"
    assert pool.budget.used == 0
    [pid] = pool.child_pids()
    assert _status_mb(pid) < 60  # the interpreter and Pillow: no 119 MB image allocated


async def test_an_image_that_alone_needs_more_than_the_budget_is_refused_with_a_note(
    pool: DecodePool,
) -> None:
    [note] = await pool.image("big.webp", webp_bytes(6300, 6300), max_pixels=40_000_000)
    assert note["text"] == (
        "[file: big.webp (image, 6300x6300): too costly to read (about 605 MB to decode, "
        "over the 256 MB allowed); ask for a smaller copy]"
    )
    [pid] = pool.child_pids()
    assert _status_mb(pid) < 60


async def test_cancelling_the_awaiting_task_kills_the_decode() -> None:
    pool = DecodePool(DecodeLimits(workers=1, cpu_s=120))
    try:
        task = asyncio.create_task(pool.pdf("fonts.pdf", cmap_pdf_bytes(100), max_chars=20_000))
        [pid] = await wait_until(pool.child_pids, timeout=30)
        await wait_until(lambda: _cpu_s(pid) > 1.5, timeout=60)  # well into the pages
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_until(lambda: not _alive(pid), timeout=10)
        assert pool.child_pids() == []
    finally:
        await pool.aclose()


async def test_concurrent_images_share_the_workers_byte_budget() -> None:
    """Four 3000 x 3000 WebPs (each about 144 MB to decode by its estimate) on four children
    with a 256 MB budget: one decodes at a time, so the children's resident memory adds up to
    one decode and four interpreters, not four decodes (about 4 x 130 MB)."""
    pool = DecodePool(DecodeLimits(workers=4, memory_bytes=256 * MB, cpu_s=30))
    webp = webp_bytes(3000, 3000)
    files = [FileData(f"w{i}.webp", "image/webp", webp) for i in range(4)]
    done = asyncio.Event()
    sampler = asyncio.create_task(_sum_rss_peak(pool, done))
    try:
        content = await read_human_content("look", files, pool=pool)
        pids = pool.child_pids()
        peaks = [_status_mb(pid) for pid in pids]
    finally:
        done.set()
        peak = await sampler
        await pool.aclose()
    notes = [b["text"] for b in content if isinstance(b, dict) and b["type"] == "text"]
    assert notes == ["look"] + [f"[image: w{i}.webp, 1568x1568]" for i in range(4)]
    assert len(pids) == 4
    one_decode = 3000 * 3000 * 4 * 3.8 / MB  # measured: libwebp's canvas, Pillow's copy, …
    assert min(peaks) > one_decode * 0.8  # each child did decode one (the sampler saw them)
    assert peak < 4 * 40 + one_decode * 1.5, (peak, peaks)


async def test_a_small_image_is_decoded_and_the_child_reused(pool: DecodePool) -> None:
    first = await pool.image("a.png", png_bytes(2000, 1000), max_pixels=40_000_000)
    [pid] = pool.child_pids()
    second = await pool.image("b.png", png_bytes(30, 20), max_pixels=40_000_000)
    assert [first[0]["text"], second[0]["text"]] == [
        "[image: a.png, 1568x784]",
        "[image: b.png, 30x20]",
    ]
    assert pool.child_pids() == [pid]
    assert pool.budget.used == 0
