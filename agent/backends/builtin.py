"""The built-in agent (`SWITCHBOARD_AGENT=builtin`): `create_agent` with our tools and middleware.

The graph is compiled once with the model, the built-in tools plus any MCP tools, one
model-call middleware (`agent.middleware`: the lean rewrite of old attachments and the history
window over the thread as stored, then steering, then thread repair around loop detection;
messages steered into a run join the request after the window and count from the next model
call) and the Redis checkpointer; turns run through
`LocalGraphRunner`. Reloading MCP tools (the admin API changed the config) compiles a new graph
and swaps it in; runs already going finish on the old one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from agent.attachments import MAX_IMAGE_PIXELS
from agent.backends.local import LocalGraphRunner
from agent.history_window import history_window
from agent.loop_detection import LoopDetectionMiddleware, LoopPolicy
from agent.mcp import McpServerStatus, load_mcp_tools
from agent.middleware import TurnMiddleware
from agent.repair import ThreadRepairMiddleware
from agent.tools import builtin_tools
from agent.tracing import TracingConfig
from agent.usage import ModelPrice
from storage.warnings import PendingWarnings

__all__ = ["BuiltinAgent", "build_builtin_graph"]


class BuiltinAgent(LocalGraphRunner):
    """`create_agent` + built-in tools + MCP tools, run on our checkpointer."""

    def __init__(
        self,
        *,
        model: BaseChatModel,
        checkpointer: BaseCheckpointSaver[Any],
        warnings: PendingWarnings,
        system_prompt: str,
        recursion_limit: int = 50,
        tracing: TracingConfig | None = None,
        extra_tools: Sequence[BaseTool] = (),
        loop_policy: LoopPolicy | None = None,
        clear_stale_warnings: bool = True,
        price: ModelPrice | None = None,
        files_dir: Path | None = None,
        max_image_pixels: int = MAX_IMAGE_PIXELS,
        history_tokens: int = 0,
        summary_model: BaseChatModel | None = None,
    ) -> None:
        """`history_tokens`: the history window (0: the whole thread goes to the model), with
        summaries written by `summary_model` (default: `model`).
        `clear_stale_warnings=False` when every turn is started through a caller that already
        drops earlier runs' warnings with the thread lock (the manager's `TurnGate.begin`).
        `price` costs model calls whose provider reports no cost (`TurnResult.usage`).
        `files_dir`: the outbound-file directory `send_file` reads paths in (`agent.sandbox`);
        None: `send_file` takes text only."""
        loops = LoopDetectionMiddleware(warnings, policy=loop_policy)
        self._build = functools.partial(  # the graph's fixed parts; only the tools change
            build_builtin_graph,
            model=model,
            checkpointer=checkpointer,
            loops=loops,
            system_prompt=system_prompt,
            tracing=tracing,
            files_dir=files_dir,
            history_tokens=history_tokens,
            summary_model=summary_model,
        )
        self._extra = tuple(extra_tools)
        self._mcp: tuple[McpServerStatus, ...] = ()
        graph, names = self._build(extra_tools=self._extra)
        super().__init__(
            graph,
            loops=loops,
            kind="builtin",
            recursion_limit=recursion_limit,
            tracing=tracing,
            clear_stale_warnings=clear_stale_warnings,
            price=price,
            tools=names,
            files_dir=files_dir,
            max_image_pixels=max_image_pixels,
        )
        self.steers = True  # its model-call middleware takes steered messages

    def mcp_servers(self) -> tuple[McpServerStatus, ...]:
        """Each configured MCP server and what it gave (or why it was skipped)."""
        return self._mcp

    async def load_mcp(self, config: Any) -> tuple[McpServerStatus, ...]:
        """Load the config's MCP tools and swap in a graph offering them (and the built-ins)."""
        tools, statuses = await load_mcp_tools(config)
        graph, names = self._build(extra_tools=[*self._extra, *tools])
        self.set_tools(graph, names)
        self._mcp = tuple(statuses)
        return self._mcp


def build_builtin_graph(
    *,
    model: BaseChatModel,
    checkpointer: BaseCheckpointSaver[Any],
    loops: LoopDetectionMiddleware,
    system_prompt: str,
    tracing: TracingConfig | None = None,
    extra_tools: Sequence[BaseTool] = (),
    files_dir: Path | None = None,
    history_tokens: int = 0,
    summary_model: BaseChatModel | None = None,
) -> tuple[Any, tuple[str, ...]]:
    """The compiled graph and the names of the tools it offers (built-in first)."""
    tools = _unique([*builtin_tools(files_dir), *extra_tools])
    window = history_window(model, tokens=history_tokens, summary_model=summary_model)
    graph: Any = create_agent(
        model,
        tools=tools,
        system_prompt=system_prompt,
        middleware=[TurnMiddleware(ThreadRepairMiddleware(), loops, window=window)],
        checkpointer=checkpointer,
    )
    if tracing is not None and tracing.callbacks:
        graph = graph.with_config(callbacks=list(tracing.callbacks))
    return graph, tuple(tool.name for tool in tools)


def _unique(tools: Sequence[BaseTool]) -> list[BaseTool]:
    """The first tool of each name: an MCP server may not shadow a built-in tool, since
    `create_agent` refuses duplicate names and the agent must still start."""
    seen: dict[str, BaseTool] = {}
    for tool in tools:
        seen.setdefault(tool.name, tool)
    return list(seen.values())
