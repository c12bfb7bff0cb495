"""`UsageMeter` on the LLMResult shapes LangChain hands it: provider cost, price, tokens only."""

from __future__ import annotations

import uuid

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from agent import ModelPrice, UsageMeter


def _result(
    tokens: tuple[int, int] | None, *, cost: float | None = None, choices: int = 1
) -> LLMResult:
    usage = None
    if tokens is not None:
        usage = {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)}
    gens = [ChatGeneration(message=AIMessage(content="x", usage_metadata=usage))] * choices
    token_usage: dict[str, object] = {}
    if cost is not None:
        token_usage["cost"] = cost
    return LLMResult(
        generations=[gens], llm_output={"token_usage": token_usage, "model_name": "m-1"}
    )


def _meter(price: ModelPrice | None, *results: LLMResult) -> UsageMeter:
    meter = UsageMeter(price)
    for result in results:
        run_id = uuid.uuid4()
        meter.on_chat_model_start({}, [[]], run_id=run_id, metadata={"ls_model_name": "cfg"})
        meter.on_llm_end(result, run_id=run_id)
    return meter


def test_provider_cost_beats_the_configured_price() -> None:
    usage = _meter(ModelPrice(1.0, 1.0), _result((100, 50), cost=0.002)).usage()
    assert usage.cost_micros == 2_000
    assert usage.calls[0].provider_cost


def test_price_is_usd_per_million_tokens() -> None:
    # 1,000 in × $3/M + 500 out × $15/M = $0.0105 = 10,500 µ$
    usage = _meter(ModelPrice(3.0, 15.0), _result((1_000, 500))).usage()
    assert usage.cost_micros == 10_500
    assert (usage.input_tokens, usage.output_tokens) == (1_000, 500)


def test_tokens_only_without_price_or_provider_cost() -> None:
    usage = _meter(None, _result((10, 5)), _result((7, 3))).usage()
    assert usage.cost_micros is None
    assert (usage.input_tokens, usage.output_tokens) == (17, 8)


def test_every_call_of_a_run_is_summed_and_grouped_by_model() -> None:
    usage = _meter(None, _result((1, 1), cost=0.5), _result((1, 1), cost=0.25)).usage()
    assert len(usage.calls) == 2
    assert usage.cost_micros == 750_000
    assert usage.cost_by_model() == {"m-1": 750_000}


def test_several_choices_of_one_request_count_its_usage_once() -> None:
    usage = _meter(ModelPrice(1.0, 1.0), _result((10, 10), choices=3)).usage()
    assert usage.cost_micros == 20
    assert len(usage.calls) == 1


def test_model_name_falls_back_to_the_configured_one() -> None:
    result = LLMResult(generations=[[ChatGeneration(message=AIMessage(content="x"))]])
    usage = _meter(None, result).usage()
    assert usage.calls[0].model == "cfg"
    assert usage.calls[0].cost_micros is None
