"""Redis round trips per plain DM turn, counted on the wire (issue 30; how: `tests/round_trips.py`).

Today's count, traced command by command: inbox append, inbox read, admission (dedupe claim,
flood limit and the DM's conversation, one pipeline), queue submit with the run's checkpoint
read, checkpoint write, reply ledger, turn finish, inbox finish. A change that adds one fails here; `bench/redis_trips.py`
prints the number.
"""

from __future__ import annotations

import pytest

from tests.round_trips import measure

__all__: list[str] = []

TURNS = 30
BUDGET = 8  # round trips per plain DM turn, the target


async def test_a_plain_dm_turn_makes_no_more_redis_round_trips_than_its_budget(
    redis_url: str, prefix: str, redis_cluster: bool
) -> None:
    if redis_cluster:
        pytest.skip("a cluster client talks to every node directly; one proxy cannot count it")
    trips = await measure(redis_url, prefix, TURNS)
    assert trips.last_reply.endswith(f"t{TURNS - 1}")
    assert trips.per_turn <= BUDGET + 0.5, f"{trips.per_turn:.1f} round trips per turn"
