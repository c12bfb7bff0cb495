"""Budget windows: the UTC day and the ISO week starting Monday 00:00 UTC."""

from __future__ import annotations

from datetime import UTC, datetime

from storage import WindowKind, windows_at


def _ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_daily_window_is_the_utc_day() -> None:
    daily, _ = windows_at(_ts(2025, 3, 5, 23, 59, 59))
    assert daily.kind is WindowKind.DAILY
    assert daily.id == "2025-03-05"
    assert (daily.start, daily.end) == (_ts(2025, 3, 5), _ts(2025, 3, 6))


def test_weekly_window_runs_monday_to_monday() -> None:
    _, weekly = windows_at(_ts(2025, 3, 9, 12))  # a Sunday
    assert weekly.kind is WindowKind.WEEKLY
    assert weekly.id == "2025-W10"
    assert (weekly.start, weekly.end) == (_ts(2025, 3, 3), _ts(2025, 3, 10))


def test_monday_midnight_opens_a_new_week() -> None:
    _, before = windows_at(_ts(2025, 3, 9, 23, 59, 59))
    _, after = windows_at(_ts(2025, 3, 10))
    assert before.id != after.id and after.start == _ts(2025, 3, 10)


def test_iso_week_across_a_year_end() -> None:
    _, weekly = windows_at(_ts(2024, 12, 31, 8))  # Tuesday of ISO week 2025-W01
    assert weekly.id == "2025-W01"
    assert weekly.start == _ts(2024, 12, 30)


def test_seconds_left_never_negative() -> None:
    daily, _ = windows_at(_ts(2025, 3, 5, 18))
    assert daily.seconds_left(_ts(2025, 3, 5, 18)) == 6 * 3600
    assert daily.seconds_left(_ts(2025, 3, 7)) == 0
