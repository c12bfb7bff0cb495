"""A turn's usage and cost on `TurnResult`: the real runtime and the real langchain-openai client
against the loopback fake, which reports tokens (and, when asked, an OpenRouter-style cost)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from langchain_openai import ChatOpenAI

from agent import AgentRuntime, ModelPrice, TurnContext
from tests.fakes.openai_server import API_KEY, FakeOpenAI

CTX = TurnContext(user_id="u-1", platform="telegram")


def _model(server: FakeOpenAI, *, stream: bool = False) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini",
        base_url=server.base_url,
        api_key=API_KEY,
        streaming=stream,
        stream_usage=stream,
    )


async def test_provider_reported_cost_of_every_call_of_a_tool_loop_is_summed(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime]
) -> None:
    fake_openai.cost = 0.0125
    runtime = make_runtime(model=_model(fake_openai), price=ModelPrice(1000.0, 1000.0))
    result = await runtime.run_turn(uuid.uuid4().hex, "what time is it?", CTX)

    assert len(fake_openai.requests) == 2  # the tool call, then the answer
    assert len(result.usage.calls) == 2
    assert all(c.provider_cost for c in result.usage.calls)
    assert result.usage.cost_micros == 25_000  # the provider's figure wins over our price
    assert result.usage.cost_by_model() == {"gpt-4o-mini": 25_000}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_without_a_provider_cost_tokens_times_the_price_is_the_cost(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime], stream: bool
) -> None:
    runtime = make_runtime(model=_model(fake_openai, stream=stream), price=ModelPrice(2.0, 8.0))
    result = await runtime.run_turn(uuid.uuid4().hex, "what time is it?", CTX)

    usage = result.usage
    assert len(usage.calls) == 2
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.cost_micros == usage.input_tokens * 2 + usage.output_tokens * 8


async def test_without_a_price_a_turn_has_tokens_but_no_cost(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime]
) -> None:
    runtime = make_runtime(model=_model(fake_openai))
    result = await runtime.run_turn(uuid.uuid4().hex, "hello there", CTX)

    assert result.usage.input_tokens > 0
    assert result.usage.cost_micros is None


async def test_each_run_reports_only_its_own_calls(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime]
) -> None:
    fake_openai.cost = 0.001
    runtime = make_runtime(model=_model(fake_openai))
    thread = uuid.uuid4().hex
    asked = await runtime.run_turn(thread, "choose a flavour", CTX)
    answered = await runtime.resume(thread, "beta", CTX)

    assert asked.question is not None
    assert asked.usage.cost_micros == 1_000
    assert answered.usage.cost_micros == 1_000
