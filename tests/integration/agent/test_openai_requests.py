"""OpenAI chat requests sent without the SDK's parameter walk: the same body on the wire."""

from __future__ import annotations

from typing import Any

import openai
import openai.resources.chat.completions.completions as sdk_completions
import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_openai import ChatOpenAI
from openai import omit

from agent.model import MODEL_TIMEOUT_S
from agent.openai_requests import PlainJsonCompletions, as_extra_body
from agent.tools import builtin_tools
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.integration.agent.conftest import openai_model

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="


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
    model = openai_model(server)
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


async def _streamed(model: ChatOpenAI, text: str) -> AIMessageChunk:
    bound = model.bind_tools(list(builtin_tools()))
    whole: AIMessageChunk | None = None
    async for chunk in bound.astream([HumanMessage(text)]):
        assert isinstance(chunk, AIMessageChunk)
        whole = chunk if whole is None else whole + chunk
    assert whole is not None
    return whole


def _without_ids(message: AIMessageChunk) -> dict[str, Any]:
    """The message as the application sees it, minus the ids the fake numbers per request."""
    dumped = message.model_dump(exclude={"id"})
    for key in ("tool_calls", "tool_call_chunks"):
        dumped[key] = [{**call, "id": None} for call in dumped[key]]
    return dumped


@pytest.mark.parametrize("text", ["hello there, how are you today?", "what time is it?"])
async def test_a_streamed_answer_reads_as_the_sdk_reads_it(
    fake_openai: FakeOpenAI, text: str
) -> None:
    fake_openai.cost = 0.0125  # an OpenRouter-style `usage.cost` rides in the usage chunk
    ours = await _streamed(_built(fake_openai), text)
    sdk = await _streamed(_sdk_walked(fake_openai), text)

    assert _without_ids(ours) == _without_ids(sdk)
    assert ours.usage_metadata is not None and ours.usage_metadata["total_tokens"] > 0
    assert ours.content or ours.tool_calls


async def test_streamed_chunks_arrive_as_the_dicts_the_server_wrote(
    fake_openai: FakeOpenAI,
) -> None:
    completions = _built(fake_openai).async_client
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with await completions.create(**body, stream=True) as stream:
        chunks = [chunk async for chunk in stream]

    assert all(type(chunk) is dict for chunk in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "You said: hi"


async def test_an_error_in_the_stream_fails_the_call_as_the_sdk_fails_it(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.stream_error = "The server had an error while processing your request."
    failures = []
    for model in (_built(fake_openai), _sdk_walked(fake_openai)):
        with pytest.raises(openai.APIError) as caught:
            await _streamed(model, "hello")
        failures.append((type(caught.value), caught.value.message))

    ours, sdk = failures
    assert ours == sdk == (openai.APIError, fake_openai.stream_error)


async def test_a_refused_streamed_request_fails_as_the_sdk_fails_it(
    fake_openai: FakeOpenAI,
) -> None:
    refused = []
    for model in (_built(fake_openai), _sdk_walked(fake_openai)):
        wrong_key = model.model_copy(update={"openai_api_key": None})
        wrong_key.root_async_client.api_key = "sk-wrong"
        with pytest.raises(openai.AuthenticationError) as caught:
            await _streamed(model, "hello")
        refused.append(caught.value.status_code)
    assert refused == [401, 401]


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
