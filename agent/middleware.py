"""The agent's one model-call middleware: steering, then thread repair around loop detection.

LangChain wraps every middleware's `wrap_model_call` hook in a langsmith span, and an async span
costs two thread-pool hops per model call even with tracing off. Stacking our hooks as one keeps
that to a single span per call; the logic stays in `steer.py`, `repair.py` and
`loop_detection.py`. Steering is async only: the manager runs every turn with `ainvoke`/`astream`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
)

from agent.loop_detection import LoopDetectionMiddleware
from agent.repair import ThreadRepairMiddleware
from agent.steer import take_steered, with_steered

__all__ = ["TurnMiddleware"]


class TurnMiddleware(AgentMiddleware):
    def __init__(self, repair: ThreadRepairMiddleware, loops: LoopDetectionMiddleware) -> None:
        super().__init__()
        self._repair = repair
        self._loops = loops

    @property
    def name(self) -> str:
        return "switchboard_turn"

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse],
    ) -> ModelResponse:
        return self._repair.wrap_model_call(
            request, lambda inner: self._loops.wrap_model_call(inner, handler)
        )

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]],
    ) -> ModelCallResult[Any]:
        steered = await take_steered()
        if steered:
            request = request.override(messages=[*request.messages, *steered])
        response = await self._repair.awrap_model_call(
            request, lambda inner: self._loops.awrap_model_call(inner, handler)
        )
        return with_steered(response, steered)
