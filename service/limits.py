"""Ranges the service accepts from operators, checked the same way at every entry point.

Settings, the admin API and the CLI all take usage limits in USD; each calls `check_limit_usd`,
so a value refused in one place is refused in all of them. Kept free of heavy imports: settings
load it before anything else.
"""

from __future__ import annotations

import math

__all__ = ["ADMIN_KEY_MIN_LENGTH", "MAX_LIMIT_USD", "MIN_LIMIT_USD", "check_limit_usd"]

ADMIN_KEY_MIN_LENGTH = 24  # ~140 bits from a random generator: guessing over HTTP is hopeless
MIN_LIMIT_USD = 0.01  # below a cent, microdollar rounding would turn a limit into 0 = unlimited
MAX_LIMIT_USD = 1_000_000.0  # far above any real budget; keeps microdollars well inside int64


def check_limit_usd(usd: float) -> float:
    """`usd` if it is a usable limit: 0 (unlimited) or a finite amount in
    [MIN_LIMIT_USD, MAX_LIMIT_USD]; ValueError with a one-line reason otherwise."""
    if not math.isfinite(usd):
        raise ValueError("must be a finite amount of USD")
    if usd != 0 and not MIN_LIMIT_USD <= usd <= MAX_LIMIT_USD:
        raise ValueError(
            f"must be 0 (unlimited) or between {MIN_LIMIT_USD} and {MAX_LIMIT_USD:.0f} USD"
        )
    return usd if usd else 0.0  # -0.0 too
