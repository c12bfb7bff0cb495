"""What users read about budgets: percentages (one decimal, 100.0 only when spent), the window
and its reset in UTC and hours; never an amount."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from channels.usage import Budget, notice_text, percent_text
from storage import windows_at

WED = datetime(2031, 5, 14, 10, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("used", "limit", "shown"),
    [
        (500_000, 1_000_000, "50.0"),
        (0, 1_000_000, "0.0"),
        (1_000_000, 1_000_000, "100.0"),
        (1_700_000, 1_000_000, "100.0"),
        (999_999, 1_000_000, "99.9"),  # not spent yet, so not 100.0
        (1, 3, "33.3"),
    ],
)
def test_percent_has_one_decimal_and_is_exactly_100_at_or_over_the_limit(
    used: int, limit: int, shown: str
) -> None:
    assert percent_text(used, limit) == shown


def test_daily_notice_names_the_window_and_its_reset() -> None:
    daily, _ = windows_at(WED)
    text = notice_text(daily, WED)
    assert "daily usage limit" in text
    assert "2031-05-15 00:00 UTC" in text
    assert "in 14 h" in text  # 13.5 h left, rounded up
    assert "$" not in text


def test_weekly_notice_resets_on_monday() -> None:
    _, weekly = windows_at(WED)
    text = notice_text(weekly, WED)
    assert "weekly usage limit" in text
    assert "Monday 2031-05-19 00:00 UTC" in text
    assert "in 110 h" in text


def test_budget_is_off_only_when_both_limits_are_zero() -> None:
    assert not Budget().enabled
    assert Budget.from_usd(0, 5).enabled
    assert Budget.from_usd(0.25, 0) == Budget(250_000, 0)
