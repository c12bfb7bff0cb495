"""OpenAI chat requests sent without the SDK's parameter walk: the same body on the wire."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai.resources.chat.completions.completions as sdk_completions
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from openai import omit

from agent import build_model
from agent.model import MODEL_TIMEOUT_S
from agent.openai_requests import PlainJsonCompletions, as_extra_body
from agent.tools import builtin_tools
from tests.fakes.openai_server import API_KEY, FakeOpenAI

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    server = FakeOpenAI()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _thread() -> list[BaseMessage]:
    call = {"name": "current_time", "args": {}, "id": "call_1", "type": "tool_call"}
    return [
        SystemMessage("You are wired."),
        HumanMessage("what time is it? ünïcode ✓"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("2026-12-02T14:00:00+00:00", tool_call_id="call_1"),
        AIMessage("It is two o'clock."),
        HumanMessage(
            content=[
                {"type": "text", "text": "and what is in this picture?"},
                {"type": "image_url", "image_url": {"url": PIXEL}},
            ]
        ),
    ]


def _built(server: FakeOpenAI, **kwargs: Any) -> ChatOpenAI:
    model = build_model(
        "openai:gpt-4o-mini",
        openai_base_url=server.base_url,
        openai_api_key=API_KEY,
        anthropic_api_key=None,
    )
    assert isinstance(model, ChatOpenAI)
    return model.model_copy(update=kwargs) if kwargs else model


def _sdk_walked(server: FakeOpenAI, **kwargs: Any) -> ChatOpenAI:
    """The same model as `build_model` makes, left to the SDK's own request path."""
    return ChatOpenAI(
        model="gpt-4o-mini",
        base_url=server.base_url,
        api_key=API_KEY,  # type: ignore[arg-type]
        timeout=MODEL_TIMEOUT_S,
        stream_usage=True,
        **kwargs,
    )


async def _send(model: ChatOpenAI, stream: bool) -> None:
    bound = model.bind_tools(list(builtin_tools()))
    if stream:
        async for _ in bound.astream(_thread()):
            pass
    else:
        await bound.ainvoke(_thread())


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_the_body_on_the_wire_is_the_one_the_sdk_sends(
    fake_openai: FakeOpenAI, stream: bool
) -> None:
    built = _built(fake_openai)
    assert isinstance(built.async_client, PlainJsonCompletions)
    await _send(built, stream)
    await _send(_sdk_walked(fake_openai), stream)

    ours, sdk = fake_openai.requests
    assert ours.body == sdk.body
    assert len(ours.messages) == 6 and ours.messages[-1]["content"][1]["type"] == "image_url"
    assert sorted(ours.tool_names) == ["ask_clarification", "current_time", "send_file"]
    assert bool(ours.body.get("stream")) is stream


async def test_a_callers_extra_body_is_kept_beside_the_thread(fake_openai: FakeOpenAI) -> None:
    await _send(_built(fake_openai, extra_body={"top_k": 3}), stream=True)
    await _send(_sdk_walked(fake_openai, extra_body={"top_k": 3}), stream=True)

    ours, sdk = fake_openai.requests
    assert ours.body == sdk.body
    assert ours.body["top_k"] == 3 and len(ours.messages) == 6


async def test_the_sdk_walk_never_sees_the_thread_or_the_tools(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    walked: list[dict[str, Any]] = []
    walk = sdk_completions.async_maybe_transform

    async def spy(data: Any, expected_type: object) -> Any:
        walked.append(data)
        return await walk(data, expected_type)

    monkeypatch.setattr(sdk_completions, "async_maybe_transform", spy)
    await _send(_built(fake_openai), stream=True)
    await _send(_sdk_walked(fake_openai), stream=True)

    ours, sdk = walked
    assert ours["messages"] == [] and ours["tools"] is omit
    assert len(sdk["messages"]) == 6 and len(sdk["tools"]) == 3


def test_anything_but_plain_json_goes_the_sdk_way() -> None:
    message = {"role": "user", "content": "hi"}
    tool = {"type": "function", "function": {"name": "f", "parameters": {}}}

    moved = as_extra_body({"model": "m", "messages": [message], "tools": [tool]})
    assert moved == {
        "model": "m",
        "messages": [],
        "extra_body": {"messages": [message], "tools": [tool]},
    }

    for params in (
        {"model": "m", "messages": (message,)},  # not a list: the SDK makes one
        {"model": "m", "messages": [{**message, "name": omit}]},  # the SDK drops the omitted
        {"model": "m", "messages": [{1: "non-string key"}]},
        {"model": "m", "messages": [message], "extra_body": {"messages": []}},  # caller's wins
        {"model": "m", "messages": [message], "extra_body": "not a mapping"},
    ):
        assert as_extra_body(params) == params

    tuple_tools = as_extra_body({"model": "m", "messages": [message], "tools": (tool,)})
    assert tuple_tools["tools"] == (tool,) and tuple_tools["extra_body"] == {"messages": [message]}
