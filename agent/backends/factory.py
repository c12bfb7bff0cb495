"""Build the agent backend `SWITCHBOARD_AGENT` names: the composition root's one call.

The model is passed as a zero-argument callable and built only for `builtin`: a graph of your
own or a server brings its own model, and must not need `SWITCHBOARD_MODEL`'s key to start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import structlog
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from agent.attachments import MAX_IMAGE_PIXELS
from agent.backends.base import AgentBackend
from agent.backends.builtin import BuiltinAgent
from agent.backends.custom import load_graph, loop_guard
from agent.backends.local import LocalGraphRunner
from agent.backends.policy import api_key_for
from agent.backends.remote import RemoteGraphRunner
from agent.backends.spec import AgentSpec
from agent.loop_detection import LoopDetectionMiddleware, LoopPolicy
from agent.tracing import TracingConfig
from agent.transcription import Transcriber
from agent.usage import ModelPrice
from storage.remote_threads import RemoteThreads
from storage.warnings import PendingWarnings

__all__ = ["build_agent_backend"]

_log = structlog.get_logger(__name__)


async def build_agent_backend(
    spec: AgentSpec,
    *,
    model: Callable[[], BaseChatModel],
    checkpointer: BaseCheckpointSaver[Any],
    warnings: PendingWarnings,
    remote_threads: RemoteThreads,
    system_prompt: str,
    assistant: str = "agent",
    recursion_limit: int = 50,
    tracing: TracingConfig | None = None,
    price: ModelPrice | None = None,
    clear_stale_warnings: bool = True,
    mcp_config: Mapping[str, Any] | None = None,
    loop_policy: LoopPolicy | None = None,
    transcriber: Transcriber | None = None,
    files_dir: Path | None = None,
    max_image_pixels: int = MAX_IMAGE_PIXELS,
    history_tokens: int = 0,
    summary_model: Callable[[], BaseChatModel] | None = None,
    data_dir: Path | None = None,
    remote_api_keys: Mapping[str, str] | None = None,
) -> AgentBackend:
    """The backend, ready to run turns; raises `ConfigError` (one line) when it cannot be.
    `files_dir` is the checked outbound-file directory (`agent.sandbox.prepare_files_dir`);
    `history_tokens` and `summary_model` are the built-in agent's history window. No
    `python:` module is loaded from `data_dir`; a remote agent is sent the key of the variable
    `remote_api_keys` names for its URL (`SWITCHBOARD_AGENT_API_KEYS`), and none otherwise."""
    backend: AgentBackend
    if spec.kind == "remote":
        backend = RemoteGraphRunner(
            url=spec.target,
            assistant=assistant,
            threads=remote_threads,
            api_key=api_key_for(spec.target, remote_api_keys or {}),
        )
    elif spec.kind == "python":
        graph = await load_graph(spec.target, checkpointer, data_dir=data_dir)
        if tracing is not None and tracing.callbacks:
            graph = graph.with_config(callbacks=list(tracing.callbacks))
        backend = LocalGraphRunner(
            graph,
            loops=LoopDetectionMiddleware(warnings, policy=loop_policy),
            kind="python",
            recursion_limit=recursion_limit,
            tracing=tracing,
            clear_stale_warnings=clear_stale_warnings,
            price=price,
            answer_on_turn=True,
            run_guard=loop_guard(loop_policy),
            files_dir=files_dir,
            max_image_pixels=max_image_pixels,
        )
    else:
        builtin = BuiltinAgent(
            model=model(),
            checkpointer=checkpointer,
            warnings=warnings,
            system_prompt=system_prompt,
            recursion_limit=recursion_limit,
            tracing=tracing,
            loop_policy=loop_policy,
            clear_stale_warnings=clear_stale_warnings,
            price=price,
            files_dir=files_dir,
            max_image_pixels=max_image_pixels,
            history_tokens=history_tokens,
            summary_model=summary_model() if summary_model and history_tokens else None,
        )
        if mcp_config and mcp_config.get("mcpServers"):
            await builtin.load_mcp(mcp_config)
        backend = builtin
    if isinstance(backend, LocalGraphRunner):
        backend.transcriber = transcriber
    elif transcriber is not None:
        _log.warning(
            "transcription.ignored",
            hint="SWITCHBOARD_TRANSCRIBE_MODEL applies to local graphs only",
        )
    if mcp_config and mcp_config.get("mcpServers") and spec.kind != "builtin":
        _log.warning(
            "mcp.ignored",
            hint="SWITCHBOARD_MCP_CONFIG gives tools to the builtin agent only; "
            f"SWITCHBOARD_AGENT is {spec.kind}",
        )
    _log.info("agent.backend", backend=spec.describe(), tools=list(backend.tool_names()))
    return backend
