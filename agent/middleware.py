"""The agent's one model-call middleware: the thread kept lean and inside its history window,
then steering, then thread repair around loop detection.

Each middleware hook that is not a model-call wrapper is a graph node of its own, and a node
costs a LangGraph step per run (`before_agent`) or per model call (`before_model`): about a
tenth of a millisecond each, the largest share of a turn's graph overhead. So the two rewrites
of the thread that had such hooks run here, just before the model call, and their result goes
into the state with the model's answer, ahead of it (`add_messages` replaces a message of the
same id in place, and a `RemoveMessage` of every message starts the list anew):

- the lean rewrite of old attachments (`attachments.lean_messages`), which a thread that is
  already lean gets as an empty list after one pass over its messages;
- the history window (`history_window.py`): langchain's `SummarizationMiddleware`, run as its
  `before_model` hook would have run it.

LangChain also wraps every middleware's `wrap_model_call` hook in a langsmith span, and an async
span costs two thread-pool hops per model call even with tracing off. Stacking our hooks as one
keeps that to a single span per call; the logic stays in `steer.py`, `repair.py`,
`loop_detection.py`, `attachments.py` and `history_window.py`. Steering is async only: the
manager runs every turn with `ainvoke`/`astream`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
)
from langchain_core.messages import AnyMessage, BaseMessage

from agent.attachments import KEEP_IMAGE_TURNS, MAX_THREAD_IMAGES, lean_messages
from agent.loop_detection import LoopDetectionMiddleware
from agent.repair import ThreadRepairMiddleware
from agent.steer import take_steered, with_ahead

__all__ = ["TurnMiddleware"]


class TurnMiddleware(AgentMiddleware):
    def __init__(
        self,
        repair: ThreadRepairMiddleware,
        loops: LoopDetectionMiddleware,
        *,
        window: SummarizationMiddleware | None = None,
        keep_image_turns: int = KEEP_IMAGE_TURNS,
        max_images: int = MAX_THREAD_IMAGES,
    ) -> None:
        super().__init__()
        self._repair = repair
        self._loops = loops
        self._window = window
        self._keep = keep_image_turns
        self._max = max_images

    @property
    def name(self) -> str:
        return "switchboard_turn"

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse],
    ) -> ModelCallResult[Any]:
        messages, rewrite = self._lean(request.messages)
        if self._window is not None:
            update = self._window.before_model({"messages": messages}, request.runtime)
            messages, rewrite = _windowed(update, messages, rewrite)
        if rewrite:
            request = request.override(messages=messages)
        response = self._repair.wrap_model_call(
            request, lambda inner: self._loops.wrap_model_call(inner, handler)
        )
        return with_ahead(response, rewrite)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]],
    ) -> ModelCallResult[Any]:
        messages, rewrite = self._lean(request.messages)
        if self._window is not None:
            update = await self._window.abefore_model({"messages": messages}, request.runtime)
            messages, rewrite = _windowed(update, messages, rewrite)
        steered = await take_steered()
        if rewrite or steered:
            request = request.override(messages=[*messages, *steered])
        response = await self._repair.awrap_model_call(
            request, lambda inner: self._loops.awrap_model_call(inner, handler)
        )
        return with_ahead(response, [*rewrite, *steered])

    def _lean(self, messages: list[AnyMessage]) -> tuple[list[AnyMessage], list[BaseMessage]]:
        """The messages with old attachments made lean, and the rewritten ones (same ids)."""
        changed = lean_messages(messages, keep_turns=self._keep, max_images=self._max)
        if not changed:
            return messages, []
        by_id = {m.id: m for m in changed}
        return [by_id.get(m.id, m) for m in messages], list(changed)  # type: ignore[misc]  # lean_messages keeps each message's type


def _windowed(
    update: dict[str, Any] | None, messages: list[AnyMessage], rewrite: list[BaseMessage]
) -> tuple[list[AnyMessage], list[BaseMessage]]:
    """After the window: the messages the model sees and what the state takes ahead of the
    answer (the summarised thread starting anew, or the lean rewrite alone)."""
    if not update:
        return messages, rewrite
    fresh: list[BaseMessage] = list(update["messages"])  # RemoveMessage(all), summary, the rest
    return fresh[1:], fresh  # type: ignore[return-value]  # the rest are the thread's messages
