"""A tool-calling agent for `langgraph dev` in the remote streaming tests (graph "streaming").

`create_agent` with a scripted model that streams like a real one (word by word, a tool call in
one chunk) and a `lookup` tool whose arguments, output and own model call carry marker words, so a
test can tell assistant text from everything that must not reach `on_text`:

- `look up <x>` -> calls `lookup(query=ARGS_MARK + <x>)`; the tool streams INNER_MARK from a model
  of its own and returns OUTPUT_MARK; then the model writes REPLY, a word every WORD_EVERY_S;
- `choose` -> calls the built-in `ask_clarification`; after the answer writes "You chose: <it>.";
- anything else -> "You said: <text>".
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool

from agent.reply import content_text
from agent.tools import CLARIFICATION_TOOL, ask_clarification

__all__ = ["ARGS_MARK", "INNER_MARK", "OUTPUT_MARK", "REPLY", "WORD_EVERY_S", "graph"]

ARGS_MARK = "argsmarker-"
INNER_MARK = "innermarker"
OUTPUT_MARK = "outputmarker"
REPLY = "The lookup is done and the answer is forty two, thanks for waiting."
WORD_EVERY_S = 0.15  # the reply takes about 2 s to write: long enough to see it arrive in pieces


class ScriptedModel(BaseChatModel):
    """Answers by the rules in the module docstring; `text` overrides them (the inner model)."""

    text: str = ""

    @property
    def _llm_type(self) -> str:
        return "switchboard-remote-stream-test"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = self._answer(messages)
        if message.tool_calls:
            call = message.tool_calls[0]
            pieces = [
                AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {
                            "name": call["name"],
                            "args": json.dumps(call["args"]),
                            "id": call["id"],
                            "index": 0,
                            "type": "tool_call_chunk",
                        }
                    ],
                )
            ]
        else:
            words = content_text(message.content).split(" ")
            pieces = [AIMessageChunk(content=w if i == 0 else f" {w}") for i, w in enumerate(words)]
        for index, piece in enumerate(pieces):
            if index:
                await asyncio.sleep(WORD_EVERY_S)
            chunk = ChatGenerationChunk(message=piece)
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def _answer(self, messages: Sequence[BaseMessage]) -> AIMessage:
        if self.text:
            return AIMessage(content=self.text)
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        said = content_text(messages[start].content).strip()
        results = [m for m in messages[start + 1 :] if isinstance(m, ToolMessage)]
        if said.lower().startswith("look up "):
            if results:
                return AIMessage(content=REPLY)
            return _call("lookup", {"query": ARGS_MARK + said[len("look up ") :]}, len(messages))
        if said.lower().startswith("choose"):
            if results:
                return AIMessage(content=f"You chose: {content_text(results[-1].content)}.")
            args = {"question": "Which one do you mean?", "options": ["alpha", "beta", "gamma"]}
            return _call(CLARIFICATION_TOOL, args, len(messages))
        return AIMessage(content=f"You said: {said}")


def _call(name: str, args: dict[str, Any], position: int) -> AIMessage:
    call = {"name": name, "args": args, "id": f"call_{position}_{name}", "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])


@tool
async def lookup(query: str) -> str:
    """Look something up (its own model call runs inside the tools node)."""
    await ScriptedModel(text=f"{INNER_MARK} thinking about it").ainvoke(query)
    return OUTPUT_MARK


graph = create_agent(ScriptedModel(), tools=[lookup, ask_clarification])
