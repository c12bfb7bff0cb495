"""Votes on answers as LangSmith run feedback, when turns are traced there.

A turn's run id is its LangSmith run id (the runtime passes it as the root run's id), so a vote
is feedback on exactly the traced run: key `user_score`, score 1 (👍) or 0 (👎), with the
platform as its source. The feedback id is derived from the vote (answer, user, value, time), so
a resend of the same vote never makes a second entry; a changed vote is a new one. Sending is
best effort: a failure is logged and the vote stays stored in Redis.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from agent.tracing import langsmith_configured
from switchboard.feedback import VoteRecord, VoteValue

if TYPE_CHECKING:
    from langsmith import AsyncClient

__all__ = ["FEEDBACK_KEY", "LangSmithVotes", "langsmith_votes"]

FEEDBACK_KEY = "user_score"

_log = structlog.get_logger(__name__)
_NAMESPACE = uuid.UUID("6f1c1b0e-0d7e-4d55-9a0b-2f3c5e8a9b71")  # our votes' feedback ids


class LangSmithVotes:
    """Sends each vote as feedback on its run (`OnVote` for the channel manager)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def __call__(self, vote: VoteRecord) -> None:
        try:
            run_id = uuid.UUID(vote.run_id)
        except ValueError:
            return  # not a run of ours (a remote server's run id): nothing traced to rate
        try:
            await self._client.create_feedback(
                run_id,
                FEEDBACK_KEY,
                score=1 if vote.value is VoteValue.UP else 0,
                feedback_id=uuid.uuid5(_NAMESPACE, f"{vote.field}|{vote.value}|{vote.at}"),
                source_info={"platform": vote.platform},
                stop_after_attempt=2,
            )
        except Exception as exc:  # an export is a courtesy: the vote is stored in Redis
            _log.warning("vote.langsmith_failed", error=type(exc).__name__)
            return
        _log.info("vote.langsmith_sent", run_id=vote.run_id)

    async def aclose(self) -> None:
        await self._client.aclose()


def langsmith_votes(environ: Mapping[str, str], **client: Any) -> LangSmithVotes | None:
    """Votes for LangSmith when tracing goes there (the client reads its key and endpoint
    from the environment, as the tracer does); None otherwise."""
    if not langsmith_configured(environ):
        return None
    try:
        from langsmith import AsyncClient
    except ImportError:
        return None
    return LangSmithVotes(AsyncClient(**client))
