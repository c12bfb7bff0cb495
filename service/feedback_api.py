"""Admin HTTP API for votes on answers (admin key): the recent votes, newest first.

| method | path                   | does                                                        |
|--------|------------------------|-------------------------------------------------------------|
| GET    | `/api/admin/feedback`  | `?since=` (ISO 8601, epoch seconds, or `7d`/`24h`/`30m` ago) and `?limit=` (1-1000, default 100) |

The same `since` forms are what `switchboard feedback list --since` takes (`parse_since`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel

from storage import FeedbackStore
from switchboard.feedback import VoteRecord

__all__ = ["VoteList", "VoteOut", "add_feedback_admin", "parse_since"]

_AGO = re.compile(r"^(\d{1,6})([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class VoteOut(BaseModel):
    platform: str
    user_id: str
    value: str  # up or down
    at: datetime
    run_id: str
    thread_id: str
    chat_id: str
    message_id: str


class VoteList(BaseModel):
    votes: list[VoteOut]


def parse_since(value: str, *, now: float | None = None) -> float:
    """Epoch seconds from `2026-12-01`, `2026-12-01T10:00:00Z`, `1764583200` or `7d` (ago);
    ValueError naming the accepted forms otherwise."""
    text = value.strip()
    ago = _AGO.match(text)
    if ago is not None:
        return (time.time() if now is None else now) - int(ago[1]) * _UNIT_S[ago[2]]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"unreadable time {value!r}: give an ISO date or time, epoch seconds, or 7d/24h/30m"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _vote_out(vote: VoteRecord) -> VoteOut:
    return VoteOut(
        platform=vote.platform,
        user_id=vote.user_id,
        value=str(vote.value),
        at=datetime.fromtimestamp(vote.at, tz=UTC),
        run_id=vote.run_id,
        thread_id=vote.thread_id,
        chat_id=vote.chat_id,
        message_id=vote.message_id,
    )


def add_feedback_admin(
    app: FastAPI,
    *,
    votes: FeedbackStore,
    admin: Callable[..., Awaitable[None]],
    responses: dict[int | str, dict[str, Any]],
) -> None:
    """`admin` is the app's admin-key dependency; it raises the app's own 401."""

    @app.get(
        "/api/admin/feedback",
        response_model=VoteList,
        tags=["admin"],
        responses=responses,
        dependencies=[Depends(admin)],
    )
    async def feedback_list(
        since: str = Query("", max_length=40), limit: int = Query(100, ge=1, le=1000)
    ) -> VoteList:
        """Votes on answers changed since `since`, newest first."""
        try:
            start = parse_since(since) if since else 0.0
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return VoteList(votes=[_vote_out(v) for v in await votes.recent(since=start, limit=limit)])
