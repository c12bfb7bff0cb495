"""The Usage and Feedback pages: one user's spend against limits (reset, set limits) through
the usage desk the JSON API and CLI use, and recent votes from the feedback store."""

from __future__ import annotations

from fastapi.responses import Response

from channels.usage import usd_to_micros
from service.console.auth import Guarded, Visit
from service.console.pages import page
from service.console.sources import ConsoleSources
from service.feedback_api import parse_since
from service.limits import check_limit_usd
from service.usage_api import check_user
from storage import UsageLimits

__all__ = ["feedback_page", "usage_page"]


def usage_page(src: ConsoleSources) -> Guarded:
    async def show(visit: Visit) -> Response:
        notice = error = ""
        status = 200
        report, top = None, []
        platform, user_id = visit.get("platform"), visit.get("user_id")
        if src.usage is None:
            error = "Usage is not tracked by this process."
        elif platform or user_id:
            try:
                platform = check_user(platform, user_id)
                if visit.request.method == "POST":
                    notice = await _change_usage(src, visit, platform, user_id)
                report = await src.usage.report(platform, user_id)
            except ValueError as exc:
                error, status = str(exc), 422
        else:
            top = await src.usage.top()
        return page(
            "usage.html",
            title="Usage",
            here="/admin/usage",
            csrf=visit.csrf,
            platforms=("telegram", "slack", "discord", "console"),
            platform=platform,
            user_id=user_id,
            report=report,
            top=top,
            notice=notice,
            error=error,
            status=status,
        )

    return show


def _usd(field: str, raw: str) -> int | None:
    """A limit field: blank = the configured default; else the JSON API's range check."""
    if not raw:
        return None
    try:
        usd = float(raw)
    except ValueError:
        raise ValueError(f"{field}: not a number") from None
    try:
        return usd_to_micros(check_limit_usd(usd))
    except ValueError as exc:
        raise ValueError(f"{field} {exc}") from None


async def _change_usage(src: ConsoleSources, visit: Visit, platform: str, user_id: str) -> str:
    assert src.usage is not None
    action = visit.get("action")
    if action == "reset":
        weekly = visit.get("window") == "week"
        await src.usage.reset(platform, user_id, weekly=weekly)
        return "This week's and today's spend reset." if weekly else "Today's spend reset."
    if action == "limits":
        daily_usd = _usd("daily limit", visit.get("daily_usd"))
        weekly_usd = _usd("weekly limit", visit.get("weekly_usd"))
        await src.usage.set_limits(platform, user_id, UsageLimits(daily_usd, weekly_usd))
        return "Limits saved."
    raise ValueError("unknown action")


def feedback_page(src: ConsoleSources) -> Guarded:
    async def show(visit: Visit) -> Response:
        since_text, error, votes = visit.get("since") or "7d", "", []
        status = 200
        if src.feedback is None:
            error = "Votes are off (SWITCHBOARD_FEEDBACK=off)."
        else:
            try:
                votes = await src.feedback.recent(since=parse_since(since_text), limit=200)
            except ValueError as exc:
                error, status = str(exc), 422
        return page(
            "feedback.html",
            title="Feedback",
            here="/admin/feedback",
            csrf=visit.csrf,
            since=since_text,
            votes=votes,
            error=error,
            status=status,
        )

    return show
