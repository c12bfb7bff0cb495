"""Admin HTTP API for usage budgets (admin key): inspect, reset, override one user's limits.

Registered by `service/http.py` on the same app and behind the same admin key as
`/api/admin/config`. Unlike chat, it shows raw amounts (USD and microdollars) and limits:

| method | path                                               | does                                 |
|--------|----------------------------------------------------|--------------------------------------|
| GET    | `/api/admin/usage/{platform}/{user_id}`            | spend and limits per window          |
| POST   | `/api/admin/usage/{platform}/{user_id}/reset`      | `{"weekly": false}`: today only      |
| PUT    | `/api/admin/usage/{platform}/{user_id}/limits`     | `{"daily_usd", "weekly_usd"}` (null = the configured default, 0 = unlimited, else 0.01 to 1e6 USD; 422 otherwise) |
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, Field, field_validator

from channels.message import Platform
from channels.usage import UsageDesk, UsageReport, WindowUsage, percent_text, usd_to_micros
from service.limits import check_limit_usd
from storage import UsageLimits

__all__ = ["LimitsIn", "ResetIn", "UsageOut", "WindowOut", "add_usage_admin", "check_user"]

_USER_ID = re.compile(r"^[^\s{}]{1,128}$")


class WindowOut(BaseModel):
    window: str  # e.g. 2025-03-05 or 2025-W10
    used_usd: float
    used_micros: int
    limit_usd: float  # 0 = unlimited
    limit_micros: int
    limit_overridden: bool
    percent_used: float | None  # None when unlimited
    exceeded: bool
    resets_at: datetime


class UsageOut(BaseModel):
    platform: str
    user_id: str
    daily: WindowOut
    weekly: WindowOut


class ResetIn(BaseModel):
    weekly: bool = False


class LimitsIn(BaseModel):
    daily_usd: float | None = Field(None, allow_inf_nan=False)
    weekly_usd: float | None = Field(None, allow_inf_nan=False)

    @field_validator("daily_usd", "weekly_usd")
    @classmethod
    def _in_range(cls, value: float | None) -> float | None:
        """`1e-07` would round to 0 (unlimited) and `1e308` overflow the microdollar count."""
        return None if value is None else check_limit_usd(value)


def check_user(platform: str, user_id: str) -> str:
    """The platform name if both parts are usable in a usage key; ValueError otherwise."""
    try:
        known = Platform(platform.lower())
    except ValueError:
        names = ", ".join(p.value for p in Platform)
        raise ValueError(f"unknown platform {platform!r}: expected one of {names}") from None
    if not _USER_ID.match(user_id):
        raise ValueError("malformed user id: 1-128 characters, no spaces or braces")
    return known.value


def _window(usage: WindowUsage) -> WindowOut:
    limit = usage.limit_micros
    return WindowOut(
        window=usage.window.id,
        used_usd=usage.used_micros / 1_000_000,
        used_micros=usage.used_micros,
        limit_usd=limit / 1_000_000,
        limit_micros=limit,
        limit_overridden=usage.overridden,
        percent_used=float(percent_text(usage.used_micros, limit)) if limit else None,
        exceeded=usage.exceeded,
        resets_at=datetime.fromtimestamp(usage.window.end, tz=UTC),
    )


def _out(report: UsageReport) -> UsageOut:
    return UsageOut(
        platform=report.platform,
        user_id=report.user_id,
        daily=_window(report.daily),
        weekly=_window(report.weekly),
    )


def add_usage_admin(
    app: FastAPI,
    *,
    usage: UsageDesk,
    admin: Callable[..., Awaitable[None]],
    responses: dict[int | str, dict[str, Any]],
) -> None:
    """`admin` is the app's admin-key dependency; it raises the app's own 401."""

    def user(platform: str, user_id: str) -> tuple[str, str]:
        try:
            return check_user(platform, user_id), user_id
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None

    @app.get(
        "/api/admin/usage/{platform}/{user_id}",
        response_model=UsageOut,
        tags=["admin"],
        responses=responses,
        dependencies=[Depends(admin)],
    )
    async def usage_show(platform: str, user_id: str) -> UsageOut:
        """One user's spend per window (raw amounts) and the limits in force."""
        return _out(await usage.report(*user(platform, user_id)))

    @app.post(
        "/api/admin/usage/{platform}/{user_id}/reset",
        response_model=UsageOut,
        tags=["admin"],
        responses=responses,
        dependencies=[Depends(admin)],
    )
    async def usage_reset(platform: str, user_id: str, body: ResetIn | None = None) -> UsageOut:
        """Forget today's spend; this week's too with `{"weekly": true}`."""
        name, uid = user(platform, user_id)
        await usage.reset(name, uid, weekly=bool(body and body.weekly))
        return _out(await usage.report(name, uid))

    @app.put(
        "/api/admin/usage/{platform}/{user_id}/limits",
        response_model=UsageOut,
        tags=["admin"],
        responses=responses,
        dependencies=[Depends(admin)],
    )
    async def usage_limits(platform: str, user_id: str, body: LimitsIn) -> UsageOut:
        """Override this user's limits (null = the configured default, 0 = unlimited)."""
        name, uid = user(platform, user_id)
        limits = UsageLimits(
            None if body.daily_usd is None else usd_to_micros(body.daily_usd),
            None if body.weekly_usd is None else usd_to_micros(body.weekly_usd),
        )
        await usage.set_limits(name, uid, limits)
        return _out(await usage.report(name, uid))
