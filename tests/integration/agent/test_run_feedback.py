"""Votes as LangSmith run feedback: the real `langsmith.AsyncClient` against a LangSmith API
stand-in on loopback that records `POST /feedback` (and can refuse it)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from agent.run_feedback import FEEDBACK_KEY, langsmith_votes
from switchboard.feedback import VoteRecord, VoteValue


class FakeLangSmith:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.project_ids: dict[str, uuid.UUID] = {}
        self.project_reads: list[str] = []
        self.status = 200
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _feedback(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        self.posts.append({"body": body, "key": request.headers.get("x-api-key")})
        if self.status != 200:
            return web.json_response({"detail": "refused"}, status=self.status)
        return web.json_response(body)

    async def _info(self, request: web.Request) -> web.Response:
        return web.json_response({"version": "0.0-fake"})

    async def _sessions(self, request: web.Request) -> web.Response:
        """`GET /sessions?name=…`: the project by name, as LangSmith lists it."""
        self.project_reads.append(request.query.get("name", ""))
        name = request.query.get("name", "")
        project = {"id": str(self.project_ids.setdefault(name, uuid.uuid4())), "name": name}
        tenant = {"tenant_id": str(uuid.UUID(int=1)), "reference_dataset_id": None}
        return web.json_response([{**project, **tenant}])

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/feedback", self._feedback)
        app.router.add_get("/info", self._info)
        app.router.add_get("/sessions", self._sessions)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def langsmith() -> AsyncIterator[FakeLangSmith]:
    server = FakeLangSmith()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _vote(value: VoteValue, run_id: str | None = None) -> VoteRecord:
    return VoteRecord("slack", "U1", run_id or str(uuid.uuid4()), value, 1_796_083_200.0)


async def test_a_vote_becomes_feedback_on_its_run_once_however_often_it_is_sent(
    langsmith: FakeLangSmith,
) -> None:
    env = {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "ls-test-key"}
    votes = langsmith_votes(env, api_url=langsmith.url, api_key="ls-test-key")
    assert votes is not None
    down = _vote(VoteValue.DOWN)
    try:
        await votes(down)
        await votes(down)  # a resend names the same feedback id
        await votes(_vote(VoteValue.UP, down.run_id))
    finally:
        await votes.aclose()
    first, again, changed = (p["body"] for p in langsmith.posts)
    assert first["run_id"] == down.run_id and first["key"] == FEEDBACK_KEY
    assert first["score"] == 0 and changed["score"] == 1
    assert first["id"] == again["id"] != changed["id"]
    assert first["feedback_source"]["metadata"] == {"platform": "slack"}
    assert langsmith.posts[0]["key"] == "ls-test-key"


async def test_feedback_names_the_tracers_project_read_once(
    langsmith: FakeLangSmith, recwarn: pytest.WarningsRecorder
) -> None:
    """LangSmith deprecated run feedback without `session_id` (a SmithDB-only deployment
    refuses it): each vote names the project the run was traced to."""
    env = {"LANGSMITH_TRACING": "true", "LANGSMITH_PROJECT": "support-bot"}
    votes = langsmith_votes(env, api_url=langsmith.url, api_key="k")
    assert votes is not None
    try:
        await votes(_vote(VoteValue.UP))
        await votes(_vote(VoteValue.DOWN))
    finally:
        await votes.aclose()
    project = str(langsmith.project_ids["support-bot"])
    assert [p["body"]["session_id"] for p in langsmith.posts] == [project, project]
    assert langsmith.project_reads == ["support-bot"]
    assert not [w for w in recwarn if "session_id" in str(w.message)]


async def test_a_refused_export_is_only_logged(langsmith: FakeLangSmith) -> None:
    langsmith.status = 403
    votes = langsmith_votes({"LANGSMITH_TRACING": "true"}, api_url=langsmith.url, api_key="k")
    assert votes is not None
    try:
        await votes(_vote(VoteValue.UP))  # does not raise
    finally:
        await votes.aclose()
    assert len(langsmith.posts) == 1


def test_without_langsmith_tracing_votes_stay_home() -> None:
    assert langsmith_votes({"LANGSMITH_TRACING": "false", "LANGSMITH_API_KEY": "k"}) is None
    assert langsmith_votes({}) is None
