"""Which agent answers a turn, as a binding chose it: plain data the channel layer hands the agent.

Why a leaf: `channels.bindings` decides it and `agent.backends.registry` builds and picks the
backend for it; neither layer's types should leak into the other. An empty field means the
operator's default (`SWITCHBOARD_AGENT`, `SWITCHBOARD_AGENT_ASSISTANT`, `SWITCHBOARD_MODEL`,
`SWITCHBOARD_SYSTEM_PROMPT`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["AgentChoice"]


@dataclass(frozen=True, slots=True)
class AgentChoice:
    agent: str = ""  # builtin | python:pkg.module:attr | http(s)://…
    assistant: str = ""  # the assistant / graph id on a LangGraph server
    model: str = ""  # provider:model, for the built-in agent
    system_prompt: str = ""  # for the built-in agent

    def over(self, default: AgentChoice) -> AgentChoice:
        """This choice with its empty fields taken from `default`."""
        return AgentChoice(
            agent=self.agent or default.agent,
            assistant=self.assistant or default.assistant,
            model=self.model or default.model,
            system_prompt=self.system_prompt or default.system_prompt,
        )

    @property
    def is_default(self) -> bool:
        return not (self.agent or self.assistant or self.model or self.system_prompt)

    def describe(self) -> str:
        """As operators read it: no credentials, no system prompt."""
        agent = self.agent or "builtin"
        if agent.lower().startswith(("http://", "https://")):
            try:
                parts = urlsplit(agent)
                where = f"{parts.scheme}://{parts.hostname or ''}"
                where += f":{parts.port}" if parts.port else ""
            except ValueError:
                where = "(malformed URL)"
            return f"remote {where} ({self.assistant or 'agent'})"
        if agent.startswith("python:"):
            return agent
        return f"builtin {self.model}".rstrip()
