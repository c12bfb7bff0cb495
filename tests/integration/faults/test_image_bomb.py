"""An image bomb sent to a real worker: a ~490 KB PNG whose header says 13,000 x 13,000 pixels
(over 500 MB decoded). The worker reads the header, refuses it with a note to the model, answers
the turn, and its peak RSS stays within 200 MB of what it used before the picture arrived.

One real `switchboard serve` process (webhook mode) on the fake Bot API. The peak is the kernel's
high-water mark (`VmHWM` in /proc/<pid>/status), reset just before the bomb is posted by writing
5 to /proc/<pid>/clear_refs, so a spike between two samples cannot hide.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fakes.sample_files import bomb_png_bytes, png_bytes
from tests.fakes.telegram_server import FakeTelegram
from tests.integration.faults.processes import Worker
from tests.integration.faults.telegram_service import post_until_taken
from tests.support import wait_until

pytestmark = pytest.mark.timeout(180)

ANN = FakeTelegram.user(7, "Ann")
HEADROOM_KB = 200 * 1024


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _reset_peak(pid: int) -> None:
    """VmHWM := VmRSS (Linux 4.0+), so the next VmHWM is the peak from now on."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def test_a_13000_square_png_is_refused_and_the_worker_stays_within_200_mb(
    fake: FakeTelegram, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    bomb = await asyncio.to_thread(bomb_png_bytes, 13_000, 13_000)
    assert len(bomb) < 1_000_000
    worker = Worker(fake, redis_url, prefix, tmp_path / "w")
    chat = fake.dm(ANN)
    try:
        await worker.start()
        assert worker.proc is not None
        pid = worker.proc.pid
        async with worker.http() as http:
            # A first picture warms the path (Pillow imported, a decode done): the baseline
            # below is a worker that has already handled images, not a cold one.
            warm = ("warm.png", png_bytes(800, 600), "image/png")
            await post_until_taken(http, fake.say(chat, ANN, caption="first", document=warm))
            await wait_until(lambda: fake.bot_texts(ANN["id"]), timeout=60)
            idle_kb = _status_kb(pid, "VmRSS")
            _reset_peak(pid)
            big = ("bomb.png", bomb, "image/png")
            await post_until_taken(http, fake.say(chat, ANN, caption="and this?", document=big))
            await wait_until(lambda: len(fake.bot_texts(ANN["id"])) >= 2, timeout=60)
            peak_kb = _status_kb(pid, "VmHWM")
    finally:
        await worker.stop()
    assert peak_kb < idle_kb + HEADROOM_KB, f"peak {peak_kb} kB, idle {idle_kb} kB"
    assert fake.bot_texts(ANN["id"]) == [
        "I see an image (800x600). You said: first",
        "I can't read bomb.png. You said: and this?",
    ]
    (refused,) = worker.log_events("attachment.image_refused")
    assert (refused["width"], refused["height"]) == (13_000, 13_000)
