"""Budget settings: 0 = unlimited by default; a bad price or budget stops start-up with one line
naming the variable."""

from __future__ import annotations

import pytest

from service.settings import Settings, load_settings
from switchboard.errors import ConfigError


def test_budgets_default_to_unlimited_without_a_price() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.budget_daily_usd, settings.budget_weekly_usd) == (0, 0)
    assert settings.price_per_million is None


def test_price_is_input_and_output_usd_per_million_tokens() -> None:
    settings = load_settings(_env_file=None, SWITCHBOARD_MODEL_PRICE=" 0.15 , 0.60 ")
    assert settings.price_per_million == (0.15, 0.60)


@pytest.mark.parametrize("value", ["0.15", "a,b", "1,2,3", "-1,2", "inf,1"])
def test_a_bad_price_is_one_line_naming_the_variable(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None, SWITCHBOARD_MODEL_PRICE=value)
    message = str(caught.value)
    assert message.startswith("invalid setting SWITCHBOARD_MODEL_PRICE:")
    assert "\n" not in message


@pytest.mark.parametrize("name", ["SWITCHBOARD_BUDGET_DAILY_USD", "SWITCHBOARD_BUDGET_WEEKLY_USD"])
@pytest.mark.parametrize("value", ["-1", "nan", "lots"])
def test_a_bad_budget_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"^invalid setting {name}:"):
        load_settings(_env_file=None, **{name: value})


@pytest.mark.parametrize("name", ["SWITCHBOARD_BUDGET_DAILY_USD", "SWITCHBOARD_BUDGET_WEEKLY_USD"])
@pytest.mark.parametrize("value", ["1e-07", "0.001", "1e308", "1e20", "1000001", "inf", "-inf"])
def test_a_budget_outside_a_cent_to_a_million_dollars_is_refused(name: str, value: str) -> None:
    """`1e-07` would round to 0 microdollars, which means unlimited; `1e20` overflows int64."""
    with pytest.raises(ConfigError, match=f"^invalid setting {name}:"):
        load_settings(_env_file=None, **{name: value})


@pytest.mark.parametrize(("value", "usd"), [("0", 0.0), ("0.01", 0.01), ("1e6", 1_000_000.0)])
def test_zero_and_a_cent_to_a_million_dollars_are_accepted(value: str, usd: float) -> None:
    settings = load_settings(_env_file=None, SWITCHBOARD_BUDGET_DAILY_USD=value)
    assert settings.budget_daily_usd == usd
