"""A LangGraph server as the agent (`SWITCHBOARD_AGENT=http(s)://…`), through `langgraph-sdk`.

- Threads: one server thread per Switchboard thread, created on first use; the mapping lives in
  Redis (`storage.RemoteThreads`, key `sb:{<thread>}:remote`) so every worker, after any restart,
  continues the same server thread. Runs pass `if_not_exists="create"`, so a server that lost
  the thread (an in-memory dev server restarted) starts it afresh instead of failing every turn.
- Runs are streamed (`values` for the state, `updates` for interrupts). The reply is
  `extract_reply` of the final state's messages, exactly as for a local graph.
- Token streaming: when `TurnContext.on_text` is set, the run also asks for `messages-tuple`
  (`[message, metadata]` per model token, "messages" events) and filters it as the local runner
  does (`agent.streamed_text`): assistant text to `on_text`, one "Using <tool>…" per tool to
  `on_status`. Without `on_text` that mode is not requested, so the server sends no tokens.
- Clarifications: the server's interrupts become our `Question` (same value shape as local:
  `{"question", "options", …}` or a string); `resume` sends `Command(resume=answer)`. A new
  message while a question waits answers it, as with a local graph of your own.
- Cancellation: when the coroutine is cancelled (`/stop`, a timeout, a lost lock) the server run
  is cancelled too, then `CancelledError` is re-raised. Cancelling a run that already finished or
  was interrupted counts as done (the server answers 404 then). The stream is also opened with
  `on_disconnect="cancel"`, which covers a cancel that lands before the run id is known.
- Conversation context (`TurnContext.context_messages`) goes before a new turn's message as one
  user message named `conversation_context` (`agent.quoted`), as for a local graph.
- The API key is only the one passed in (`SWITCHBOARD_AGENT_API_KEYS` names it per URL): the
  SDK is told so explicitly, or it would send `LANGGRAPH_API_KEY`, `LANGSMITH_API_KEY` or
  `LANGCHAIN_API_KEY` from the environment to whatever URL it is given. It is never logged.
- Usage: a server does not report its model calls to us, so `TurnResult.usage` is empty (budgets
  do not apply to a remote agent).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from typing import Any

import httpx
import structlog
from langchain_core.messages import convert_to_messages
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, LangGraphError, NotFoundError
from langgraph_sdk.schema import StreamMode

from agent.backends.local import first_question
from agent.quoted import context_payload
from agent.reply import extract_reply
from agent.result import Question, TurnContext, TurnResult
from agent.streamed_text import StreamedText
from storage.remote_threads import RemoteThreads
from switchboard.errors import AgentError, SwitchboardError

__all__ = ["CANCEL_TIMEOUT_S", "RemoteGraphRunner"]

CANCEL_TIMEOUT_S = 10.0  # a server that does not confirm a cancel by then is left to on_disconnect

_log = structlog.get_logger(__name__)


class RemoteGraphRunner:
    """Turns run on a LangGraph server; build once per process."""

    steers = False  # the server's run cannot take our messages mid-run: they queue

    def __init__(
        self,
        *,
        url: str,
        assistant: str,
        threads: RemoteThreads,
        client: Any | None = None,
        api_key: str | None = None,
    ) -> None:
        self._url = url
        self._assistant = assistant
        self._threads = threads
        # api_key=None tells the SDK to send none: its default reads the environment
        self._client = client if client is not None else get_client(url=url, api_key=api_key)

    @property
    def kind(self) -> str:
        return "remote"

    @property
    def client(self) -> Any:
        """The SDK client (tests read run statuses through it)."""
        return self._client

    def tool_names(self) -> tuple[str, ...]:
        return ()  # the server's graph owns its tools; the API does not list them

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._client.aclose()

    async def server_thread(self, thread_id: str) -> str | None:
        """The server thread behind `thread_id`, if one was created."""
        return await self._threads.get(thread_id)

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult:
        server_thread, created = await self._thread(thread_id)
        if not created and await self._interrupts(server_thread):
            return await self._answer(server_thread, thread_id, text, context)
        before = context_payload(context.context_messages)
        payload = {"messages": [*before, {"role": "user", "content": text}]}
        return await self._run(server_thread, thread_id, context, input=payload)

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult:
        server_thread, created = await self._thread(thread_id)
        if created or not await self._interrupts(server_thread):
            _log.info("agent.resume_without_question", backend="remote")
            payload = {"messages": [{"role": "user", "content": answer}]}
            return await self._run(server_thread, thread_id, context, input=payload)
        return await self._answer(server_thread, thread_id, answer, context)

    async def pending_question(self, thread_id: str) -> Question | None:
        server_thread = await self._threads.get(thread_id)
        if server_thread is None:
            return None
        return first_question(await self._interrupts(server_thread))

    async def _answer(
        self, server_thread: str, thread_id: str, answer: str, context: TurnContext
    ) -> TurnResult:
        pending = await self._interrupts(server_thread)
        # Several parallel questions: answer the first; the others interrupt again.
        value: Any = answer if len(pending) <= 1 else {str(pending[0].get("id")): answer}
        return await self._run(server_thread, thread_id, context, command={"resume": value})

    async def _thread(self, thread_id: str) -> tuple[str, bool]:
        """(server thread id, whether it was created just now)."""
        known = await self._threads.get(thread_id)
        if known is not None:
            return known, False
        try:
            made = await self._client.threads.create(metadata={"switchboard_thread_id": thread_id})
        except (LangGraphError, httpx.HTTPError) as exc:
            raise AgentError(_failed("thread create", exc)) from None
        server_thread = str(made["thread_id"])
        held = await self._threads.claim(thread_id, server_thread)
        return held, held == server_thread

    async def _interrupts(self, server_thread: str) -> list[Mapping[str, Any]]:
        try:
            state = await self._client.threads.get_state(server_thread)
        except NotFoundError:
            return []  # the server lost the thread; the next run creates it again
        except (LangGraphError, httpx.HTTPError) as exc:
            raise AgentError(_failed("state read", exc)) from None
        found = state.get("interrupts")
        if found is None:  # older servers list them per task only
            found = [i for task in state.get("tasks") or () for i in task.get("interrupts") or ()]
        return [i for i in found or () if isinstance(i, dict)]

    async def _run(
        self,
        server_thread: str,
        thread_id: str,
        context: TurnContext,
        **payload: Any,
    ) -> TurnResult:
        created: dict[str, Any] = {}
        values: dict[str, Any] = {}
        interrupts: list[Any] = []
        relay = StreamedText(context) if context.on_text is not None else None
        modes: list[StreamMode] = ["values", "updates"]
        if relay is not None:
            modes.append("messages-tuple")
        stream = self._client.runs.stream(
            server_thread,
            self._assistant,
            stream_mode=modes,
            metadata={"switchboard_thread_id": thread_id, "platform": context.platform},
            on_disconnect="cancel",
            multitask_strategy="interrupt",  # a run left by a dead worker gives way
            if_not_exists="create",
            on_run_created=created.update,
            **payload,
        )
        try:
            async for part in stream:
                data = part.data
                if part.event == "metadata" and isinstance(data, dict):
                    created.setdefault("run_id", data.get("run_id"))
                elif part.event == "error":
                    kind = data.get("error") if isinstance(data, dict) else None
                    raise AgentError(f"the agent server run failed ({kind or 'error'})")
                elif part.event == "messages":
                    if relay is not None and _is_pair(data):
                        await relay.relay(data[0], data[1])
                elif isinstance(data, dict):
                    if part.event == "values":
                        values = data
                    if isinstance(data.get("__interrupt__"), list):
                        interrupts = data["__interrupt__"]
        except asyncio.CancelledError:
            await self._cancel(server_thread, created.get("run_id"))
            raise
        except SwitchboardError:
            raise
        except (LangGraphError, httpx.HTTPError) as exc:
            raise AgentError(_failed("run", exc)) from None
        run_id = str(created.get("run_id") or uuid.uuid4())
        question = first_question(interrupts)
        messages = convert_to_messages(values.get("messages") or [])
        reply = extract_reply(messages, question)
        _log.debug("agent.run_finished", backend="remote", run_id=run_id, asked=bool(question))
        return TurnResult(reply_text=reply, run_id=run_id, question=question)

    async def _cancel(self, server_thread: str, run_id: str | None) -> None:
        """Cancel the server run; finished or interrupted runs count as cancelled."""
        if not run_id:
            return  # the run never started on our side of the wire: on_disconnect covers it
        try:
            await asyncio.wait_for(
                asyncio.shield(self._client.runs.cancel(server_thread, run_id)),
                CANCEL_TIMEOUT_S,
            )
        except (NotFoundError, ConflictError):
            pass  # no longer running: done already
        except (LangGraphError, httpx.HTTPError, TimeoutError) as exc:
            _log.warning("agent.remote_cancel_failed", run_id=run_id, error=type(exc).__name__)
        else:
            _log.info("agent.remote_run_cancelled", run_id=run_id)

    async def cancel_run(self, thread_id: str, run_id: str) -> None:
        """Cancel one run of `thread_id` on the server; idempotent."""
        server_thread = await self._threads.get(thread_id)
        if server_thread is not None:
            await self._cancel(server_thread, run_id)


def _is_pair(data: Any) -> bool:
    """A "messages-tuple" event's data: `[message dict, metadata dict]`."""
    return (
        isinstance(data, list | tuple)
        and len(data) == 2
        and isinstance(data[0], dict)
        and isinstance(data[1], dict)
    )


def _failed(what: str, exc: BaseException) -> str:
    """Status codes and error classes only: server messages may echo request data."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    detail = f"HTTP {status}" if status else exc.__class__.__name__
    return f"the agent server {what} failed ({detail})"
