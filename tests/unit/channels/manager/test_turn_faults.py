"""A failure at every await of a turn, not a hand-picked few, and what must still hold after it.

A `Manager` (with its real `Intake` and `TurnScheduler`) runs on the in-memory ports, a scripted
model and the `RecordingAdapter`. Every port, adapter and model call made for a turn goes through
one counting proxy. A clean run of a scenario counts those awaits (N); then for each k in 1..N the
scenario runs again with the k-th await raising: a transient failure (`TransientStorageError` for
a store or the model, `PlatformRateLimited` for the platform) or a plain `RuntimeError` (a bug),
either before the call takes effect or, for a store, after it did (a lost reply). Recovery is what
a fleet does on its own: the memory clock moves past lock TTLs, idle entries and backoffs, and the
intake's housekeeping reclaims entries and sweeps watched threads until nothing is left.

Then, for every k: no reply is sent twice, no message is answered twice (two different answers,
or an answer and an error line), every message is answered (an error line with a reference is an
answer to a bug, never to a transient failure), the model never runs for a batch whose answer is
recorded, nor more than `max_attempts` times for one batch, and no queue is left without someone
to answer it. What the walk finds broken today is listed in `KNOWN_BUGS` (each entry must keep
failing, and nothing else may). The lock keeper's beats are timed, so they are tested on their
own, and so are failures that repeat on every attempt.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from structlog.testing import capture_logs

from agent.result import Question, TurnContext, TurnResult
from channels.adapter import Capabilities, Markup
from channels.manager import Manager, ManagerConfig, encode_message
from channels.manager.turns.hold import ThreadHold
from channels.manager.turns.ledger import TurnRecord
from channels.message import InboundMessage, Platform, conversation_key
from switchboard.errors import PlatformRateLimited, TransientStorageError
from switchboard.state import Lock
from tests.fakes.memory_ports import MemoryPorts
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until

__all__: list[str] = []

Kind = Literal["store", "platform", "model"]
Failure = Literal["transient", "bug"]
Timing = Literal["before", "after"]

MAX_ATTEMPTS = 3
LOCK_TTL_S = 30.0
CAPS = Capabilities(max_len=80, len_unit="chars", markup=Markup.PLAIN)  # a part per message
ERROR_PREFIX = "Sorry — "
_TOKEN = re.compile(r"\b[mq]\d+\b")
_UNCOUNTED = ("inbox:", "hold:")  # the intake's own loops and the keeper: not a turn's awaits


# -- the walk: counting proxies and the injected failure ----------------------------------------


@dataclass(frozen=True)
class Fault:
    k: int  # the k-th counted await fails (0: every call named `every`)
    failure: Failure
    timing: Timing = "before"
    every: str = ""  # a call that always fails ("model.run_turn")
    times: int = 1  # the k-th and the next `times - 1` counted awaits fail

    def error(self, kind: Kind) -> Exception:
        if self.failure == "bug":
            return RuntimeError("injected bug")
        if kind == "platform":
            return PlatformRateLimited("injected 429", platform="slack", retry_after=1.0)
        return TransientStorageError("injected: connection lost")


@dataclass
class Walk:
    fault: Fault | None = None
    calls: list[str] = field(default_factory=list)
    fired: str = ""  # the call that raised
    driver: asyncio.Task[Any] | None = None  # the test's own task (start, stop): not a turn

    async def call(
        self, name: str, kind: Kind, fn: Callable[..., Awaitable[Any]], *a: Any, **kw: Any
    ) -> Any:
        task = asyncio.current_task()
        if task is None or task is self.driver or task.get_name().startswith(_UNCOUNTED):
            return await fn(*a, **kw)
        self.calls.append(name)
        fault = self.fault
        if fault is None or (
            not fault.k <= len(self.calls) < fault.k + fault.times and name != fault.every
        ):
            return await fn(*a, **kw)
        self.fired = name
        if self.fault.timing == "after":
            await fn(*a, **kw)
        raise self.fault.error(kind)


class Counted:
    """Every coroutine method of `target` as an await the walk counts; anything else as is (so
    `isinstance` checks against the adapter Protocols still see what the target has)."""

    def __init__(self, walk: Walk, name: str, kind: Kind, target: Any) -> None:
        self._walk, self._name, self._kind, self._target = walk, name, kind, target

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target, attr)
        if not inspect.iscoroutinefunction(value):
            return value
        walk, name, kind = self._walk, f"{self._name}.{attr}", self._kind

        async def counted(*a: Any, **kw: Any) -> Any:
            return await walk.call(name, kind, value, *a, **kw)

        return counted


# -- the scripted model ---------------------------------------------------------------------------


def _part(batch: str, i: int) -> str:
    return f"answer {batch} part {i}".ljust(45, ".")  # two never share one chunk (CAPS)


class Model:
    """Answers a batch in `parts` chunks naming its message tokens ("m1+m2"), or asks a question
    when a message says "pick". At each call it checks that the batch has no recorded answer:
    the model must never run again for one."""

    def __init__(self, ports: MemoryPorts, parts: int) -> None:
        self._ports = ports
        self._parts = parts
        self.calls: list[str] = []  # the batch of each call
        self.violations: list[str] = []

    def _called(self, thread_id: str, batch: str) -> None:
        self.calls.append(batch)
        ledger = self._ports.queue.ledger(thread_id)
        if ledger is None:
            return
        entries = TurnRecord.decode(ledger.record).entries
        queued = self._ports.queue.queued(thread_id)
        if all(e in queued for e in entries):
            self.violations.append(f"the model ran for {batch} although its answer was recorded")

    def _reply(self, batch: str) -> TurnResult:
        text = "\n\n".join(_part(batch, i) for i in range(1, self._parts + 1))
        return TurnResult(reply_text=text, run_id=uuid.uuid4().hex)

    async def run_turn(self, thread_id: str, text: str, context: TurnContext) -> TurnResult:
        batch = "+".join(_TOKEN.findall(text))
        self._called(thread_id, batch)
        if "pick" in text:
            question = Question(
                text=f"Pick for {batch}: a, b or c?", question="Pick?", options=("a", "b", "c")
            )
            return TurnResult(reply_text="", run_id=uuid.uuid4().hex, question=question)
        return self._reply(batch)

    async def resume(self, thread_id: str, answer: str, context: TurnContext) -> TurnResult:
        batch = "+".join(_TOKEN.findall(answer)) + " resumed"
        self._called(thread_id, batch)
        return self._reply(batch)


# -- scenarios ------------------------------------------------------------------------------------


def _msg(token: str, text: str, *, dm: bool = True) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="D1" if dm else "C1",
        sender_id="U1",
        sender_name="alice",
        text=f"{token} {text}",
        provider_message_id=f"p-{token}",
        is_dm=dm,
        mentions_bot=not dm,
        thread_anchor=None if dm else "1700000000.000100",
    )


@dataclass(frozen=True)
class Scenario:
    name: str
    messages: tuple[InboundMessage, ...]
    parts: int = 1  # chunks of each answer

    @property
    def tokens(self) -> set[str]:
        return {_TOKEN.findall(m.text)[0] for m in self.messages}


SCENARIOS = [
    Scenario("dm", (_msg("m1", "hello"),)),
    Scenario("channel-three-chunks", (_msg("m1", "tell", dm=False),), parts=3),
    Scenario("follow-up-queued", (_msg("m1", "hi"), _msg("m2", "and then")), parts=2),
    Scenario("question-then-answer", (_msg("q1", "pick one", dm=False), _msg("m2", "b", dm=False))),
]


@dataclass
class Left:
    """What one run left behind."""

    sent: list[str]
    model_calls: list[str]
    violations: list[str]
    unwatched: str  # right after the failure: a queue nobody would answer, or ""
    stranded: str  # after recovery: what is still unanswered, or ""


class World:
    """One worker (Manager, Intake, TurnScheduler) on the memory ports, every call counted."""

    def __init__(self, scenario: Scenario, walk: Walk, *, slots: int = 64) -> None:
        self.scenario = scenario
        self.ports = MemoryPorts(lock_ttl_s=LOCK_TTL_S)
        self.adapter = RecordingAdapter(capabilities=CAPS)
        self.model = Model(self.ports, scenario.parts)
        self.walk = walk
        config = ManagerConfig(
            typing_delay_s=3600.0,  # no typing hint: its timing is not the turn's
            max_attempts=MAX_ATTEMPTS,
            lock_ttl_s=LOCK_TTL_S,
            retry_delays_s=(0.001, 0.002, 0.004, 0.008),
            sweep_every_s=0.001,
            max_concurrent_turns=slots,
        )
        self.manager = Manager(
            runtime=Counted(walk, "model", "model", self.model),
            stores=self.ports.stores(lambda name, port: Counted(walk, name, "store", port)),
            config=config,
        )
        self.manager.register(Counted(walk, "adapter", "platform", self.adapter))

    def _busy(self) -> bool:
        return self.manager._intake.busy  # white box: entries and sweeps in hand

    async def _queued(self) -> tuple[str, list[str]]:
        key = self.scenario.messages[0]
        thread = await self.ports.threads.peek(conversation_key(key))
        return (thread or "", self.ports.queue.queued(thread) if thread else [])

    async def _stranded(self) -> str:
        _thread, queued = await self._queued()
        entries = list(self.ports.stream.entries)
        if not queued and not entries:
            return ""
        return f"queue {queued}, inbox {entries}, watched {self.ports.orphans.watched()}"

    async def _unwatched(self) -> str:
        thread, queued = await self._queued()
        if not queued or thread in self.ports.orphans.watched() or self.ports.stream.entries:
            return ""
        return f"queue {queued} watched by nobody (lock {self.ports.queue.holder(thread)!r})"

    async def _settle(self, condition: Callable[[], bool]) -> None:
        await wait_until(lambda: condition() and not self._busy(), timeout=30.0, interval=0.001)

    async def run(self, *, idle_first: bool = False) -> Left:
        """The scenario, then recovery; `idle_first`: the worker waits for new messages (its
        reader blocked in the inbox) before the clock moves, as a worker does between bursts."""
        self.walk.driver = asyncio.current_task()
        for msg in self.scenario.messages:  # in the inbox before the worker starts: one read
            await self.ports.inbox.append(encode_message(msg))
        await self.manager.start()
        try:
            await self._settle(lambda: not self.ports.stream.unread())
            unwatched = await self._unwatched()
            if idle_first:
                reads = self.ports.inbox.reads
                await wait_until(lambda: self.ports.inbox.reads > reads, timeout=10.0)
            for _round in range(MAX_ATTEMPTS + 4):
                if not await self._stranded():
                    break
                self.ports.clock.advance(700.0)  # past lock TTLs, idle entries and any backoff
                seen = self.ports.inbox.observed
                await self._settle(lambda seen=seen: self.ports.inbox.observed >= seen + 2)
            stranded = await self._stranded()
        finally:
            await self.manager.aclose(timeout=5.0)
        return Left(
            self.adapter.texts(), self.model.calls, self.model.violations, unwatched, stranded
        )


# -- the invariants -------------------------------------------------------------------------------

_ANSWER = re.compile(r"^answer (.+?) part (\d+)\.*$")
_QUESTION = re.compile(r"^Pick for (.+?): ")


def _problems(scenario: Scenario, left: Left, failure: Failure | None) -> list[str]:
    """Every invariant the run broke, in words (empty: none)."""
    out = list(left.violations)
    errors = [t for t in left.sent if t.startswith(ERROR_PREFIX)]
    replies = [t for t in left.sent if not t.startswith(ERROR_PREFIX)]
    out += [f"sent {n} times: {t!r}" for t, n in Counter(replies).items() if n > 1]
    parts: dict[str, set[int]] = {}  # batch -> the parts of its answer that were sent
    for text in replies:
        if match := _ANSWER.match(text):
            parts.setdefault(match[1], set()).add(int(match[2]))
        elif match := _QUESTION.match(text):
            parts.setdefault(match[1], set()).update(range(1, scenario.parts + 1))
        else:
            out.append(f"an unexpected message: {text!r}")
    by_token: dict[str, set[str]] = {}
    for batch in parts:
        for token in _TOKEN.findall(batch):
            by_token.setdefault(token, set()).add(batch)
    out += [f"{t} answered twice: {sorted(b)}" for t, b in by_token.items() if len(b) > 1]
    whole = {b for b, p in parts.items() if p == set(range(1, scenario.parts + 1))}
    missing = sorted(t for t in scenario.tokens if not by_token.get(t, set()) & whole)
    if missing and not errors:
        out.append(f"{missing} got neither a whole answer nor an error line; sent {left.sent}")
    if errors and not missing:
        out.append(f"an error line although every message got its whole answer: {left.sent}")
    if errors and failure == "transient":
        out.append(f"an error line for a transient failure: {errors}")
    out += [
        f"the model ran {n} times for {b} (max_attempts {MAX_ATTEMPTS})"
        for b, n in Counter(left.model_calls).items()
        if n > MAX_ATTEMPTS
    ]
    if left.unwatched:
        out.append(f"right after the failure: {left.unwatched}")
    if left.stranded:
        out.append(f"after recovery still unanswered: {left.stranded}")
    return out


def _is_store(call: str) -> bool:
    return not call.startswith(("model.", "adapter."))


# -- known bugs -----------------------------------------------------------------------------------

# What the walk finds today, each reported with its cause; every entry must keep failing exactly
# so (the test says when one stops: remove it then), and any other failure is new. Only plain
# exceptions (bugs) are listed: every transient failure at every await already holds. None today.
KNOWN_BUGS: dict[tuple[str, Timing, str], tuple[str, tuple[str, ...]]] = {}


# -- the walk -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize(
    ("failure", "timing"),
    [("transient", "before"), ("bug", "before"), ("transient", "after"), ("bug", "after")],
)
async def test_a_failure_at_any_await_of_a_turn_leaves_every_message_answered_once(
    scenario: Scenario, failure: Failure, timing: Timing
) -> None:
    with capture_logs():
        clean_walk = Walk()
        clean = await World(scenario, clean_walk).run()
        assert _problems(scenario, clean, None) == []
        points = clean_walk.calls
        assert points
        new: list[str] = []
        known_seen: set[str] = set()
        for k, call in enumerate(points, 1):
            if timing == "after" and not _is_store(call):
                continue  # a platform or model call that took effect, then failed: not a store's
            walk = Walk(Fault(k, failure, timing))
            left = await World(scenario, walk).run()
            assert walk.fired == call, f"await {k} was {walk.fired!r} this time, {call!r} before"
            problems = _problems(scenario, left, failure)
            known = KNOWN_BUGS.get((scenario.name, timing, call)) if failure == "bug" else None
            if problems and known is not None:
                known_seen.add(call)
                problems = [p for p in problems if not p.startswith(known[1])]
            new += [f"await {k}/{len(points)} {call}: {p}" for p in problems]
    fixed = [
        call
        for (name, when, call) in KNOWN_BUGS
        if failure == "bug" and name == scenario.name and when == timing and call not in known_seen
    ]
    assert not new, "\n".join(new)
    assert not fixed, f"no longer failing, remove from KNOWN_BUGS: {fixed}"


# -- the keeper's beats ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error", [TransientStorageError("injected"), RuntimeError("injected bug")], ids=type
)
async def test_a_failing_keeper_beat_does_not_stop_the_keeper(error: Exception) -> None:
    ports = MemoryPorts(lock_ttl_s=0.15)  # a beat every 50 ms
    slot = await ports.queue.submit("t1", "1-0", b"m", "tok")
    assert slot.lock is not None
    beats: list[Lock] = []

    class FlakyLocks:
        async def keep(self, lock: Lock) -> tuple[bool, bool]:
            beats.append(lock)
            if len(beats) == 1:
                raise error
            return await ports.locks.keep(lock)

        async def release(self, lock: Lock) -> bool:
            return await ports.locks.release(lock)

        async def request_stop(self, thread_id: str) -> bool:
            return await ports.locks.request_stop(thread_id)

    with capture_logs():
        async with ThreadHold(FlakyLocks(), slot.lock, on_stop=lambda _: None) as hold:
            await wait_until(lambda: len(beats) >= 3, timeout=5.0)
    assert not hold.lost
    assert ports.queue.holder("t1") == "tok"


async def test_an_idle_worker_with_few_turn_slots_still_answers_a_thread_handed_back() -> None:
    scenario = SCENARIOS[0]
    with capture_logs():
        clean = Walk()
        await World(scenario, clean).run()
        send = clean.calls.index("adapter.send") + 1  # a 429 there: handed back, swept later
        left = await World(scenario, Walk(Fault(send, "transient")), slots=8).run(idle_first=True)
    assert _problems(scenario, left, "transient") == []


async def test_a_batch_whose_model_fails_every_attempt_runs_max_attempts_times_then_is_told() -> (
    None
):
    walk = Walk(Fault(0, "transient", every="model.run_turn"))
    with capture_logs():
        left = await World(SCENARIOS[0], walk).run()
    assert walk.calls.count("model.run_turn") == MAX_ATTEMPTS
    assert len(left.sent) == 1 and left.sent[0].startswith(ERROR_PREFIX)
    assert not left.stranded


async def test_a_recorded_answer_the_platform_refuses_every_attempt_is_given_up_in_time() -> None:
    walk = Walk(Fault(0, "transient", every="adapter.send"))
    with capture_logs():
        left = await World(SCENARIOS[0], walk).run()
    assert walk.calls.count("model.run_turn") == 1
    assert walk.calls.count("adapter.send") <= MAX_ATTEMPTS + 1  # each attempt, then the error
    assert not left.stranded


async def test_a_submit_that_takes_effect_then_raises_twice_leaves_the_queue_watched() -> None:
    scenario = SCENARIOS[0]
    clean = Walk()
    with capture_logs():
        await World(scenario, clean).run()
    first = clean.calls.index("queue.submit") + 1
    walk = Walk(Fault(first, "bug", "after", times=2))  # the submit asked again fails too
    with capture_logs():
        left = await World(scenario, walk).run()
    assert walk.calls.count("queue.submit") >= 2
    assert _problems(scenario, left, "bug") == []
