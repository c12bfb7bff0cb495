"""What a turn's model calls cost: tokens per call and microdollars when they can be known.

A `UsageMeter` is a LangChain callback handler made fresh for each run and passed in that run's
config, so it sees every model call of the turn (tool loops, resumed runs, models called inside
tools) without any node or middleware of its own, whatever the graph looks like. Per call:

1. the provider's own figure when the response carries one (OpenRouter-style `usage.cost` in USD,
   which langchain-openai keeps in `llm_output["token_usage"]`);
2. else input/output tokens × `ModelPrice` (USD per million tokens, so tokens × price is
   microdollars directly);
3. else unknown: the call still counts its tokens, but adds nothing to the cost.

A turn whose calls all have an unknown cost has `cost_micros is None`: budgets cannot apply to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from agent.result import ModelCall, TurnUsage

__all__ = ["ModelPrice", "UsageMeter"]

_UNKNOWN_MODEL = "unknown"


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million input and output tokens (`SWITCHBOARD_MODEL_PRICE=IN,OUT`)."""

    input_usd_per_m: float
    output_usd_per_m: float

    def micros(self, input_tokens: int, output_tokens: int) -> int:
        """tokens × USD per 10⁶ tokens = 10⁻⁶ USD: the product is already in microdollars."""
        return round(input_tokens * self.input_usd_per_m + output_tokens * self.output_usd_per_m)


class UsageMeter(BaseCallbackHandler):
    """Collects the model calls of one run; make one per run, read `usage()` when it ends.

    Runs inline on the event loop (a few dict reads per call, cheaper than a thread hop) and asks
    LangChain to skip chain, tool and retriever events, which it has no use for.
    """

    run_inline = True

    def __init__(self, price: ModelPrice | None = None) -> None:
        super().__init__()
        self._price = price
        self._models: dict[UUID, str] = {}
        self._calls: list[ModelCall] = []

    @property
    def ignore_chain(self) -> bool:
        return True

    @property
    def ignore_agent(self) -> bool:
        return True

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the configured model name; defining this also keeps LangChain from
        stringifying every prompt for the `on_llm_start` fallback."""
        name = (metadata or {}).get("ls_model_name")
        if name:
            self._models[run_id] = str(name)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        configured = self._models.pop(run_id, "")
        llm_output = response.llm_output or {}
        for index, generations in enumerate(response.generations):
            # Several choices of one request repeat the request's usage: count it once.
            self._calls.append(
                self._call(generations, llm_output if index == 0 else {}, configured)
            )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._models.pop(run_id, None)

    def usage(self) -> TurnUsage:
        return TurnUsage(tuple(self._calls))

    def _call(
        self, generations: Sequence[Any], llm_output: Mapping[str, Any], configured: str
    ) -> ModelCall:
        message = next((g.message for g in generations if isinstance(g, ChatGeneration)), None)
        meta: Mapping[str, Any] = message.response_metadata if message is not None else {}
        usage = getattr(message, "usage_metadata", None) or {}
        input_tokens = int(usage.get("input_tokens") or 0)
        output_tokens = int(usage.get("output_tokens") or 0)
        model = str(
            llm_output.get("model_name") or meta.get("model_name") or configured or _UNKNOWN_MODEL
        )
        reported = _provider_cost(llm_output, meta)
        if reported is not None:
            cost: int | None = round(reported * 1_000_000)
        elif self._price is not None:
            cost = self._price.micros(input_tokens, output_tokens)
        else:
            cost = None
        return ModelCall(model, input_tokens, output_tokens, cost, reported is not None)


def _provider_cost(*sources: Mapping[str, Any]) -> float | None:
    """`usage.cost` (USD) wherever the integration left the raw usage block."""
    for source in sources:
        for name in ("token_usage", "usage"):
            block = source.get(name)
            if isinstance(block, Mapping):
                cost = block.get("cost")
                if isinstance(cost, int | float) and not isinstance(cost, bool):
                    return float(cost)
    return None
