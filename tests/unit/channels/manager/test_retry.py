"""The manager's idempotent steps: a first attempt with no retry machinery, then tenacity's
backoff and bounds after a storage error."""

from __future__ import annotations

import time

import pytest

from channels.manager.turns.retry import run_idempotent
from switchboard.errors import StorageError

__all__: list[str] = []


class _Flaky:
    def __init__(self, failures: int, value: str = "done") -> None:
        self.failures = failures
        self.calls = 0
        self.value = value

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise StorageError("redis is restarting")
        return self.value


async def test_steps_that_succeed_at_once_run_once_each_and_keep_their_order() -> None:
    first, second = _Flaky(0, "a"), _Flaky(0, "b")
    assert await run_idempotent([first, second], (0.01,)) == ["a", "b"]
    assert (first.calls, second.calls) == (1, 1)


async def test_a_storage_error_runs_every_step_again_until_they_succeed() -> None:
    flaky, steady = _Flaky(2), _Flaky(0, "b")
    assert await run_idempotent([flaky, steady], (0.001, 0.001, 0.001)) == ["done", "b"]
    assert (flaky.calls, steady.calls) == (3, 3)


async def test_the_error_is_raised_after_one_attempt_per_delay_more() -> None:
    flaky = _Flaky(100)
    with pytest.raises(StorageError):
        await run_idempotent([flaky], (0.001, 0.001))
    assert flaky.calls == 3


async def test_no_delays_means_no_retry() -> None:
    flaky = _Flaky(1)
    with pytest.raises(StorageError):
        await run_idempotent([flaky], ())
    assert flaky.calls == 1


async def test_attempts_go_on_for_at_least_the_given_time() -> None:
    flaky = _Flaky(100)
    started = time.monotonic()
    with pytest.raises(StorageError):
        await run_idempotent([flaky], (0.01,), at_least_s=0.3)
    assert time.monotonic() - started >= 0.3
    assert flaky.calls > 2


async def test_an_error_other_than_storage_is_not_retried() -> None:
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        await run_idempotent([broken], (0.001, 0.001))
    assert calls == 1
