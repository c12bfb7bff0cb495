"""Votes on answers as LangSmith run feedback, when turns are traced there.

A turn's run id is its LangSmith run id (the runtime passes it as the root run's id), so a vote
is feedback on exactly the traced run: key `user_score`, score 1 (👍) or 0 (👎), with the
platform as its source. The feedback id is derived from the vote (answer, user, value, time), so
a resend of the same vote never makes a second entry; a changed vote is a new one. Sending is
best effort: a failure is logged and the vote stays stored in Redis.

Feedback names its run's project (`session_id`): LangSmith deprecated feedback without it, and a
SmithDB-only deployment refuses it. The project is the tracer's (`LANGSMITH_PROJECT`, else
`LANGCHAIN_PROJECT`, else `default`); its id is read once per process, on the first vote.
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

    def __init__(self, client: AsyncClient, *, project: str = "default") -> None:
        self._client = client
        self._project = project
        self._project_id: uuid.UUID | None = None

    async def _session_id(self) -> uuid.UUID:
        if self._project_id is None:
            self._project_id = (await self._client.read_project(project_name=self._project)).id
        return self._project_id

    async def __call__(self, vote: VoteRecord) -> None:
        try:
            run_id = uuid.UUID(vote.run_id)
        except ValueError:
            return  # not a run of ours (a remote server's run id): nothing traced to rate
        try:
            await self._client.create_feedback(
                run_id,
                FEEDBACK_KEY,
                session_id=await self._session_id(),
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
    project = environ.get("LANGSMITH_PROJECT") or environ.get("LANGCHAIN_PROJECT") or "default"
    return LangSmithVotes(AsyncClient(**client), project=project)
