"""At the log level users run (INFO) a model call writes no line of its own. The model client's
HTTP library logs every request at INFO ("HTTP Request: POST …"): a second line per turn, and a
formatted one to pay for (issue 30). The openai SDK moved from httpx to httpx2, whose logger the
quiet list missed; this test drives the real client, so a future rename is caught too."""

from __future__ import annotations

import io

from agent.model import build_model
from service.logging import configure_logging
from tests.fakes.openai_server import API_KEY, FakeOpenAI


async def test_a_model_call_at_info_writes_no_request_line_of_the_http_library() -> None:
    server = FakeOpenAI()
    base_url = await server.start()
    out = io.StringIO()
    try:
        configure_logging(level="INFO", stream=out)
        model = build_model(
            "openai:gpt-test",
            openai_base_url=base_url,
            openai_api_key=API_KEY,
            anthropic_api_key=None,
        )
        await model.ainvoke("echo whole")
        async for _ in model.astream("echo streamed"):
            pass
    finally:
        await server.stop()
    assert len(server.requests) == 2  # both calls reached the model
    logged = out.getvalue()
    assert "model.built" in logged  # INFO lines of our own are written
    assert "HTTP Request" not in logged, logged
    assert "chat/completions" not in logged, logged
