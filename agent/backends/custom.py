"""Your own graph (`SWITCHBOARD_AGENT=python:pkg.module:attr`): loaded, checked, given our saver.

`attr` is a compiled LangGraph graph, or a zero-argument factory (sync or async) returning one.
Its state must have a `messages` channel: a turn adds one `HumanMessage`, and the reply is this
turn's assistant text from it, exactly as for the built-in agent.

- Checkpointer: a graph compiled without one gets our Redis saver (history survives restarts,
  any worker continues any thread, and turns of a lost thread lock cannot write). A graph that
  brings its own keeps it; that is logged, because then none of those hold.
- Clarification: the graph asks by `interrupt({"question": str, "options": [str]})` (optional
  `clarification_type` and `context`, as `ask_clarification` sends; a bare string works too).
  The answer comes back as the value of `interrupt()`. The built-in `ask_clarification` tool
  (`from agent import ask_clarification`) does exactly this, so it works in your tool node.
- Loop detection: we cannot add a warning to your model's requests, but `LoopGuard` watches
  every model response of a run and ends the run once the same tool calls repeat past the stop
  threshold; the user gets the same stop message as from the built-in agent.

The module is imported with the working directory on `sys.path` (as uvicorn and `langgraph dev`
do), so `python:examples.echo_graph:graph` works from a checkout; never from the data directory
(`agent.backends.policy`). A module or factory that raises anything, `SystemExit` included, is a
`ConfigError`: it must not end the process that tried it.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import structlog
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from langgraph.checkpoint.base import BaseCheckpointSaver

from agent.backends.local import LoopStopped
from agent.backends.policy import refuse_data_dir_module
from agent.loop_detection import LoopDetector, LoopPolicy
from switchboard.errors import ConfigError

__all__ = ["LoopGuard", "load_graph", "loop_guard"]

_log = structlog.get_logger(__name__)
_SETTING = "SWITCHBOARD_AGENT"


async def load_graph(
    target: str, checkpointer: BaseCheckpointSaver[Any], *, data_dir: Path | None = None
) -> Any:
    """The compiled graph named by `pkg.module:attr`, with our checkpointer if it had none;
    a module under `data_dir` is refused before anything is imported."""
    refuse_data_dir_module(target, data_dir)
    module_name, _, attr = target.partition(":")
    module = _import(module_name, target)
    try:
        found: Any = getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"{_SETTING}=python:{target}: {module_name} has no {attr!r}") from None
    graph = found if _is_graph(found) else await _call_factory(found, target)
    channels = getattr(graph, "channels", None) or {}
    if "messages" not in channels:
        raise ConfigError(
            f"{_SETTING}=python:{target}: the graph's state has no 'messages' key "
            "(use MessagesState or a state with `messages: Annotated[list, add_messages]`)"
        )
    if getattr(graph, "checkpointer", None) in (None, False):
        graph = graph.copy(update={"checkpointer": checkpointer})
    else:
        _log.warning(
            "agent.own_checkpointer",
            target=target,
            hint="the graph brings its own checkpointer: thread history lives there, not in "
            "Switchboard's Redis, and lost thread locks cannot fence its writes",
        )
    _log.info("agent.graph_loaded", target=target)
    return graph


def _import(module_name: str, target: str) -> Any:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ConfigError(f"{_SETTING}=python:{target}: no module named {exc.name!r}") from None
        raise ConfigError(
            f"{_SETTING}=python:{target}: importing it failed: a module it needs is missing "
            f"({exc.name})"
        ) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise
    except BaseException as exc:  # SystemExit too: a module must not end the process
        raise ConfigError(
            f"{_SETTING}=python:{target}: importing it failed ({exc.__class__.__name__})"
        ) from None


def _is_graph(value: Any) -> bool:
    return callable(getattr(value, "ainvoke", None)) and callable(
        getattr(value, "aget_state", None)
    )


async def _call_factory(factory: Any, target: str) -> Any:
    if not callable(factory):
        raise ConfigError(
            f"{_SETTING}=python:{target}: expected a compiled graph or a zero-argument factory"
        )
    try:
        made = factory()
        if inspect.isawaitable(made):
            made = await made
    except TypeError as exc:
        raise ConfigError(
            f"{_SETTING}=python:{target}: the factory must take no arguments ({exc})"
        ) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise
    except BaseException as exc:  # SystemExit too: a factory must not end the process
        raise ConfigError(
            f"{_SETTING}=python:{target}: its factory failed ({exc.__class__.__name__})"
        ) from None
    if not _is_graph(made):
        raise ConfigError(
            f"{_SETTING}=python:{target}: the factory returned {type(made).__name__}, "
            "not a compiled graph (call .compile() on your StateGraph)"
        )
    return made


class LoopGuard(BaseCallbackHandler):
    """Per run: sees every model response; raises `LoopStopped` when the run loops.

    A callback cannot change the next request, so no warning reaches the model (the stop
    threshold still holds). `raise_error` makes LangChain re-raise our signal out of the run.
    """

    raise_error = True
    run_inline = True

    def __init__(self, policy: LoopPolicy | None = None) -> None:
        super().__init__()
        self._detector = LoopDetector(policy or LoopPolicy())

    @property
    def ignore_chain(self) -> bool:
        return True

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                calls = (
                    getattr(generation.message, "tool_calls", None)
                    if isinstance(generation, ChatGeneration)
                    else None
                )
                if not calls:
                    continue
                verdict = self._detector.observe(calls)
                if verdict is not None and verdict.stop:
                    raise LoopStopped
                if verdict is not None:
                    _log.info("loop.warned", backend="python", delivered=False)


def loop_guard(policy: LoopPolicy | None) -> type[LoopGuard]:
    """A `LoopGuard` class bound to `policy`, for `LocalGraphRunner(run_guard=...)`."""

    class _Bound(LoopGuard):
        def __init__(self) -> None:
            super().__init__(policy)

    return _Bound
