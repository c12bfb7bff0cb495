"""Loop detection: notice an agent repeating itself, warn it once, and stop it if it goes on.

Two layers watch each model response that calls tools:

- identical calls: the response's tool calls are hashed (name plus salient args, order-independent)
  into a window of the last 20 responses; 3 identical hashes in the window queue a warning, 5 stop
  the loop;
- frequency: calls per tool name in the run; 30 queue a warning, 50 stop, with per-tool overrides.

Everything is scoped to one run (the runtime's fresh `run_id`), never to the thread: a chat that
lives for weeks asks for the time on many separate turns, and that is not a loop. Run state lives
in this process (a run never moves between processes; a resume is a new run) and is dropped by
`finish_run`.

A warning is queued in Redis for (thread, run) and added to the NEXT model request only, as one
`HumanMessage(name="loop_warning")` after every tool result; it is never written to graph state,
so it neither grows the thread nor shows up in a later turn. A stop drops the response's tool calls
and asks the model once more, tools ignored, for a final answer; the user sees only that prose,
never a framework marker.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolCall

from agent.reply import assistant_text
from storage.warnings import PendingWarnings
from switchboard.errors import AgentError

__all__ = [
    "LOOP_WARNING_NAME",
    "STOPPED_FALLBACK",
    "LoopDetectionMiddleware",
    "LoopDetector",
    "LoopPolicy",
    "Verdict",
    "call_signature",
    "warning_message",
]

LOOP_WARNING_NAME = "loop_warning"
STOPPED_FALLBACK = (
    "I stopped because I kept repeating the same step without getting further. "
    "Could you rephrase the request or break it into smaller steps?"
)
MAX_TRACKED_RUNS = 4096  # Runs end in finish_run; the cap only bounds runs whose caller vanished.
_SYNC_BRIDGE_TIMEOUT_S = 30.0

_log = structlog.get_logger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LoopPolicy:
    """Thresholds; `per_tool` maps a tool name to its own (warn, stop) call counts."""

    window: int = 20
    warn_identical: int = 3
    stop_identical: int = 5
    warn_per_tool: int = 30
    stop_per_tool: int = 50
    per_tool: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    salient_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def limits_for(self, tool: str) -> tuple[int, int]:
        return self.per_tool.get(tool, (self.warn_per_tool, self.stop_per_tool))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one response means: a warning for the model, or a stop (with the reason)."""

    warning: str = ""
    stop: bool = False


def _normalise(value: Any) -> Any:
    """Drop empty values and collapse whitespace, so cosmetic differences hash the same."""
    if isinstance(value, Mapping):
        return {
            str(k): _normalise(v) for k, v in value.items() if v is not None and v not in ("", [])
        }
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def call_signature(
    tool_calls: Iterable[ToolCall], salient_args: Mapping[str, tuple[str, ...]] | None = None
) -> str:
    """A short hash of a response's tool calls: names plus salient args, order-independent."""
    parts: list[str] = []
    for call in tool_calls:
        name = call.get("name", "")
        args = call.get("args") or {}
        keep = (salient_args or {}).get(name)
        if keep is not None:
            args = {k: v for k, v in args.items() if k in keep}
        encoded = json.dumps(
            _normalise(args), sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":")
        )
        parts.append(f"{name}\x1f{encoded}")
    parts.sort()
    return hashlib.blake2b("\x1e".join(parts).encode(), digest_size=8).hexdigest()


class LoopDetector:
    """One run's view: a window of response signatures and per-tool counts (all O(1) per call)."""

    __slots__ = ("_counts", "_per_tool", "_policy", "_warned", "_window")

    def __init__(self, policy: LoopPolicy) -> None:
        self._policy = policy
        self._window: deque[str] = deque()
        self._counts: Counter[str] = Counter()
        self._per_tool: Counter[str] = Counter()
        self._warned: set[str] = set()

    def observe(self, tool_calls: Sequence[ToolCall]) -> Verdict | None:
        policy = self._policy
        signature = call_signature(tool_calls, policy.salient_args)
        self._window.append(signature)
        self._counts[signature] += 1
        if len(self._window) > policy.window:
            old = self._window.popleft()
            self._counts[old] -= 1
            if not self._counts[old]:
                del self._counts[old]
        names = [call.get("name", "") for call in tool_calls]
        stop = False
        warnings: list[str] = []
        repeats = self._counts[signature]
        if repeats >= policy.stop_identical:
            stop = True
        elif repeats >= policy.warn_identical and signature not in self._warned:
            self._warned.add(signature)
            warnings.append(_identical_warning(names, repeats))
        self._per_tool.update(names)
        for name in dict.fromkeys(names):
            warn_at, stop_at = policy.limits_for(name)
            count = self._per_tool[name]
            if count >= stop_at:
                stop = True
            elif count >= warn_at and f"tool:{name}" not in self._warned:
                self._warned.add(f"tool:{name}")
                warnings.append(_frequency_warning(name, count))
        if stop:
            return Verdict(stop=True)
        if warnings:
            return Verdict(warning="\n\n".join(warnings))
        return None


def _identical_warning(names: Sequence[str], repeats: int) -> str:
    tools = ", ".join(dict.fromkeys(names))
    return (
        f"You have made the same tool call ({tools}) with the same arguments {repeats} times in "
        "this task. Repeating it will not give a different result. Use what you already have, "
        "try a different approach, or answer the user now."
    )


def _frequency_warning(name: str, count: int) -> str:
    return (
        f"You have called the tool {name} {count} times in this task. Call it only when it is "
        "really needed, and answer the user as soon as you can."
    )


_STOP_INSTRUCTION = (
    "You are repeating the same tool calls without making progress, so tool use has ended for "
    "this task. Do not call any tool. Write your final answer to the user now, using what you "
    "already know, and say briefly if something could not be completed."
)


def warning_message(texts: Iterable[str]) -> HumanMessage:
    """One injected message for all pending warnings: deduplicated, blank lines between."""
    unique = dict.fromkeys(t.strip() for t in texts if t.strip())
    return HumanMessage(content="\n\n".join(unique), name=LOOP_WARNING_NAME)


def _last_ai(response: ModelResponse) -> AIMessage | None:
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return message
    return None


def _stopped(response: ModelResponse, forced: ModelResponse | None) -> ModelResponse:
    """The stopped response: no tool calls, and the forced answer's prose (or a fallback)."""
    original = _last_ai(response)
    answer = _last_ai(forced) if forced is not None else None
    text = (
        (assistant_text(answer) if answer is not None else "")
        or (assistant_text(original) if original is not None else "")
        or STOPPED_FALLBACK
    )
    source = answer or original
    message = AIMessage(
        content=text,
        id=original.id if original is not None else None,
        response_metadata=dict(source.response_metadata) if source is not None else {},
        usage_metadata=source.usage_metadata if source is not None else None,
    )
    return ModelResponse(result=[message])


@dataclass(slots=True)
class _RunState:
    detector: LoopDetector
    undelivered: bool = False  # this run queued a warning that no request has carried yet


def _ids(request: ModelRequest[Any]) -> tuple[str, str]:
    info = getattr(request.runtime, "execution_info", None)
    thread_id = (info.thread_id if info is not None else None) or "-"
    run_id = info.run_id if info is not None else None
    # Without a run id the run cannot be told apart; the thread is the narrowest scope left.
    return thread_id, run_id or f"thread:{thread_id}"


class LoopDetectionMiddleware(AgentMiddleware):
    """create_agent middleware; the runtime calls `start_run`/`finish_run` around each run.

    Only `wrap_model_call` hooks are used, so the middleware adds no graph node (and no
    checkpoint write) to a turn. The sync hooks share the logic and reach the async Redis client
    through the event loop that owns it, from the worker thread a sync `invoke` runs nodes on.
    """

    def __init__(
        self,
        warnings: PendingWarnings,
        *,
        policy: LoopPolicy | None = None,
        max_runs: int = MAX_TRACKED_RUNS,
    ) -> None:
        super().__init__()
        self._warnings = warnings
        self._policy = policy or LoopPolicy()
        self._max_runs = max_runs
        self._runs: OrderedDict[str, _RunState] = OrderedDict()
        self._guard = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        return "loop_detection"

    # -- run lifecycle (called by the runtime) ----------------------------------------------

    async def start_run(self, thread_id: str, run_id: str, *, clear_others: bool = True) -> None:
        """Warnings left by other runs of the thread (crashed, stopped) must never leak in;
        `clear_others=False` when the caller already cleared them atomically with its lock."""
        self._loop = asyncio.get_running_loop()
        if clear_others:
            await self._warnings.clear_other_runs(thread_id, run_id)

    async def finish_run(self, thread_id: str, run_id: str) -> None:
        """Forget the run; clear its queued warnings (only this run can have queued any)."""
        with self._guard:
            run = self._runs.pop(run_id, None)
        if run is not None and run.undelivered:
            await self._warnings.clear_run(thread_id, run_id)

    def tracked_runs(self) -> int:
        return len(self._runs)

    def _run(self, key: str) -> _RunState:
        with self._guard:
            run = self._runs.get(key)
            if run is None:
                run = _RunState(LoopDetector(self._policy))
                self._runs[key] = run
                while len(self._runs) > self._max_runs:
                    self._runs.popitem(last=False)
            else:
                self._runs.move_to_end(key)
            return run

    # -- hooks -------------------------------------------------------------------------------

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        thread_id, run_id = _ids(request)
        run = self._run(run_id)
        if run.undelivered:
            run.undelivered = False
            request = _with_warnings(request, await self._warnings.drain(thread_id, run_id))
        response = await handler(request)
        verdict = _judge(run, response)
        if verdict is None:
            return response
        if verdict.stop:
            _log.warning("loop.stopped", thread_id=thread_id, run_id=run_id)
            forced = await handler(_stop_request(request))
            return _stopped(response, forced)
        if await self._warnings.add(thread_id, run_id, verdict.warning):
            run.undelivered = True
        _log.info("loop.warned", thread_id=thread_id, run_id=run_id)
        return response

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse],
    ) -> ModelResponse:
        thread_id, run_id = _ids(request)
        run = self._run(run_id)
        if run.undelivered:
            run.undelivered = False
            texts = self._sync(lambda: self._warnings.drain(thread_id, run_id))
            request = _with_warnings(request, texts)
        response = handler(request)
        verdict = _judge(run, response)
        if verdict is None:
            return response
        if verdict.stop:
            _log.warning("loop.stopped", thread_id=thread_id, run_id=run_id)
            return _stopped(response, handler(_stop_request(request)))
        if self._sync(lambda: self._warnings.add(thread_id, run_id, verdict.warning)):
            run.undelivered = True
        _log.info("loop.warned", thread_id=thread_id, run_id=run_id)
        return response

    def _sync(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a storage coroutine from a sync hook on the loop that owns the Redis client."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise AgentError("sync agent call on the event loop thread; use ainvoke instead")
        loop = self._loop
        if loop is not None and loop.is_running():
            future = asyncio.run_coroutine_threadsafe(make(), loop)
            return future.result(timeout=_SYNC_BRIDGE_TIMEOUT_S)
        return asyncio.run(make())


def _judge(run: _RunState, response: ModelResponse) -> Verdict | None:
    message = _last_ai(response)
    if message is None or not message.tool_calls:
        return None
    return run.detector.observe(message.tool_calls)


def _with_warnings(request: ModelRequest[Any], texts: Sequence[str]) -> ModelRequest[Any]:
    if not texts:
        return request
    return request.override(messages=[*request.messages, warning_message(texts)])


def _stop_request(request: ModelRequest[Any]) -> ModelRequest[Any]:
    return request.override(messages=[*request.messages, warning_message([_STOP_INSTRUCTION])])
