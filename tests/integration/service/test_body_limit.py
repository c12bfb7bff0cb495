"""Oversized request bodies are refused with a JSON 413 before anything reads them whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

from service.http import MAX_BODY_BYTES
from tests.integration.service.conftest import Api


async def test_declared_oversized_body_is_413_and_never_reaches_the_webhook(api: Api) -> None:
    body = b"x" * (MAX_BODY_BYTES + 1)
    response = await api.client.post("/telegram/webhook", content=body)
    assert response.status_code == 413
    assert response.json() == {"error": "request body too large"}
    assert api.webhook_calls == []


async def test_streamed_oversized_body_without_length_is_413(api: Api) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b"y" * (MAX_BODY_BYTES // 10)

    response = await api.client.post("/telegram/webhook", content=chunks())
    assert response.status_code == 413
    assert api.webhook_calls == []


async def test_body_within_the_limit_is_served(api: Api) -> None:
    response = await api.client.post("/telegram/webhook", content=b"{}")
    assert response.status_code == 200
    assert api.webhook_calls == [b"{}"]


async def test_malformed_content_length_is_refused(api: Api) -> None:
    response = await api.client.post(
        "/telegram/webhook", content=b"{}", headers={"content-length": "12abc"}
    )
    assert response.status_code in (400, 413)
