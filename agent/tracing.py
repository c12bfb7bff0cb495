"""Tracing: Langfuse or LangSmith callbacks, attached once, and per-run metadata.

When a backend is configured in the environment and its package is importable, its callback
handler is built once and attached at the graph root, so every node, model and tool call of every
run is traced without per-call wiring. Each run's metadata groups its trace by conversation
(`session_id` = thread id) and user, names it, and tags it with the environment and the model;
keys the caller supplies in `TurnContext.metadata` win. Without a backend, or without its package,
everything still works: there are simply no callbacks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from langchain_core.callbacks import BaseCallbackHandler

from agent.result import TurnContext

__all__ = [
    "TRACE_NAME",
    "TracingConfig",
    "langfuse_configured",
    "langsmith_configured",
    "run_metadata",
    "spans_inline_when_untraced",
    "tracing_from_env",
]

TRACE_NAME = "switchboard.turn"

_log = structlog.get_logger(__name__)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True, slots=True)
class TracingConfig:
    """What the runtime needs for tracing; `callbacks` are attached once at the graph root."""

    env_name: str = "dev"
    model_spec: str = ""
    trace_name: str = TRACE_NAME
    callbacks: tuple[BaseCallbackHandler, ...] = ()
    backends: tuple[str, ...] = ()

    @property
    def tags(self) -> list[str]:
        return [f"env:{self.env_name}", f"model:{self.model_spec}"]


def langfuse_configured(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("LANGFUSE_PUBLIC_KEY") and environ.get("LANGFUSE_SECRET_KEY"))


def langsmith_configured(environ: Mapping[str, str]) -> bool:
    flag = (environ.get("LANGSMITH_TRACING") or environ.get("LANGCHAIN_TRACING_V2") or "").lower()
    if flag in _FALSE:
        return False
    return flag in _TRUE or bool(environ.get("LANGSMITH_API_KEY"))


def tracing_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    env_name: str,
    model_spec: str,
    trace_name: str = TRACE_NAME,
) -> TracingConfig:
    """Build the handlers for every configured backend whose package is installed."""
    env = os.environ if environ is None else environ
    callbacks: list[BaseCallbackHandler] = []
    backends: list[str] = []
    if langfuse_configured(env):
        handler = _langfuse_handler()
        if handler is not None:
            callbacks.append(handler)
            backends.append("langfuse")
    if langsmith_configured(env):
        tracer = _langsmith_tracer(env)
        if tracer is not None:
            callbacks.append(tracer)
            backends.append("langsmith")
    if backends:
        _log.info("tracing.enabled", backends=backends)
    return TracingConfig(
        env_name=env_name,
        model_spec=model_spec,
        trace_name=trace_name,
        callbacks=tuple(callbacks),
        backends=tuple(backends),
    )


def _langfuse_handler() -> BaseCallbackHandler | None:
    try:  # Langfuse 3 moved the handler; 2 kept it in `langfuse.callback`.
        from langfuse.langchain import CallbackHandler
    except ImportError:
        try:
            from langfuse.callback import CallbackHandler
        except ImportError:
            _log.warning("tracing.unavailable", backend="langfuse", reason="package missing")
            return None
    try:
        handler: BaseCallbackHandler = CallbackHandler()  # langfuse is untyped (no stubs)
        return handler
    except Exception as exc:  # a misconfigured tracer must never stop the service
        _log.warning("tracing.unavailable", backend="langfuse", reason=exc.__class__.__name__)
        return None


def _langsmith_tracer(environ: Mapping[str, str]) -> BaseCallbackHandler | None:
    try:
        from langchain_core.tracers.langchain import LangChainTracer
    except ImportError:
        _log.warning("tracing.unavailable", backend="langsmith", reason="package missing")
        return None
    project = environ.get("LANGSMITH_PROJECT") or environ.get("LANGCHAIN_PROJECT") or None
    try:
        return LangChainTracer(project_name=project)
    except Exception as exc:  # e.g. langsmith missing underneath langchain-core
        _log.warning("tracing.unavailable", backend="langsmith", reason=exc.__class__.__name__)
        return None


def run_metadata(
    *,
    thread_id: str,
    run_id: str,
    context: TurnContext,
    tracing: TracingConfig | None,
) -> dict[str, Any]:
    """The run's metadata: ids for logs and traces, then the caller's keys, which win."""
    metadata: dict[str, Any] = {
        "run_id": run_id,
        "session_id": thread_id,
        "user_id": context.user_id,
    }
    if context.platform:
        metadata["platform"] = context.platform
    if tracing is not None:
        metadata["trace_name"] = tracing.trace_name
        metadata["tags"] = tracing.tags
        if "langfuse" in tracing.backends:
            metadata["langfuse_session_id"] = thread_id
            metadata["langfuse_user_id"] = context.user_id
            metadata["langfuse_tags"] = tracing.tags
    metadata.update(context.metadata)
    return metadata


async def _inline(default: Any, ctx: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
    return ctx.run(func, *args, **kwargs)


def spans_inline_when_untraced(tracing: TracingConfig | None) -> bool:
    """Without LangSmith, run langsmith's span bookkeeping on the event loop.

    LangChain wraps each middleware hook in a langsmith `traceable`, whose async form sends its
    set-up and tear-down to a worker thread on every model call, tracing or not. Untraced, that
    work is a few dict lookups, and the thread hops cost more than the rest of our middleware.
    Process-wide (langsmith offers only a global override), so the composition root calls it once.
    """
    import langsmith

    if tracing is not None and "langsmith" in tracing.backends:
        langsmith.set_runtime_overrides()
        return False
    langsmith.set_runtime_overrides(aio_to_thread=_inline)
    return True
