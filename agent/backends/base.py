"""What every agent backend offers: the manager's `TurnRunner` plus what `/status` and tests read.

Three backends satisfy it (`builtin`, your own graph via `python:`, a LangGraph server via
`http(s)://`); the composition root picks one from `SWITCHBOARD_AGENT` and nothing else needs to
know which.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from agent.result import Question, TurnContext, TurnResult

__all__ = ["AgentBackend"]


@runtime_checkable
class AgentBackend(Protocol):
    """The agent as the channel layer sees it.

    `run_turn` and `resume` may be cancelled at any await (`/stop`, timeouts, a lost lock): a
    backend stops its work on the way out (a remote one cancels the server run) and re-raises.
    """

    @property
    def kind(self) -> str:
        """`builtin`, `python` or `remote`: for `/status` and logs."""
        ...

    steers: bool
    """Whether a run takes messages sent during it (`TurnContext.steer`, `agent.steer`)."""

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult: ...

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult: ...

    async def pending_question(self, thread_id: str) -> Question | None: ...

    def tool_names(self) -> tuple[str, ...]:
        """Tools the agent can call, as far as Switchboard knows them (empty for a server)."""
        ...

    async def aclose(self) -> None: ...
