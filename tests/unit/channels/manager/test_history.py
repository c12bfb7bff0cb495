"""Conversation context at turn time, on an in-memory context store and a scripted history
reader: which messages a turn is shown, what it costs (a DM nothing), and that no failure to read
costs the turn. The Redis store itself is tested in tests/integration/storage/test_context.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from channels import metrics
from channels.adapter import HistoryRequest
from channels.manager.context import MessageContext, Outcome
from channels.manager.gates.observe import ObserveGate
from channels.manager.turns.batches import Batch
from channels.manager.turns.history import ConversationHistory, choose
from channels.message import InboundMessage, Platform
from switchboard.conversation import ContextMark, ContextMessage, ContextState, message_order
from switchboard.errors import PlatformError, PlatformRateLimited, TransientStorageError
from tests.fakes.recording_adapter import RecordingAdapter

__all__: list[str] = []


def said(mid: int | str, text: str = "", sender: str = "Ann", **kw: Any) -> ContextMessage:
    return ContextMessage(str(mid), sender, 0.0, text or f"m{mid}", **kw)


def pick(candidates: Sequence[ContextMessage], **kw: Any) -> list[str]:
    options: dict[str, Any] = {
        "trigger": "50",
        "after": None,
        "exclude": frozenset(),
        "max_messages": 20,
        "max_chars": 8000,
        **kw,
    }
    return [m.message_id for m in choose(candidates, **options)]


# -- choosing ----------------------------------------------------------------------------------


def test_first_contact_shows_everything_before_the_trigger_oldest_first() -> None:
    assert pick([said(30), said(10), said(50), said(60), said(20)]) == ["10", "20", "30"]


def test_the_batch_is_never_repeated() -> None:
    assert pick([said(10), said(20), said(30)], exclude=frozenset({"20"})) == ["10", "30"]


def test_catch_up_shows_only_what_came_after_the_mark_and_not_the_bots_own_words() -> None:
    candidates = [said(10), said(20, is_self=True), said(30), said(40, is_self=True)]
    assert pick(candidates, after="20") == ["30"]
    assert pick(candidates) == ["10", "20", "30", "40"]  # first contact keeps the bot's words


def test_the_replied_message_is_shown_whatever_its_age_and_wins_a_duplicate() -> None:
    candidates = [said(5, replied_to=True), said(30), said(5)]
    chosen = choose(
        candidates,
        trigger="50",
        after="20",
        exclude=frozenset(),
        max_messages=20,
        max_chars=8000,
    )
    assert [(m.message_id, m.replied_to) for m in chosen] == [("5", True), ("30", False)]


def test_the_message_budget_keeps_the_newest_and_the_replied_message_first() -> None:
    candidates = [said(i) for i in range(10, 20)]
    assert pick(candidates, max_messages=3) == ["17", "18", "19"]
    assert pick([said(1, replied_to=True), *candidates], max_messages=3) == ["1", "18", "19"]


def test_the_character_budget_keeps_the_newest_and_cuts_the_next_one_short() -> None:
    candidates = [said(10, "a" * 900), said(20, "b" * 300), said(30, "c" * 100)]
    chosen = choose(
        candidates, trigger="50", after=None, exclude=frozenset(), max_messages=20, max_chars=800
    )
    assert [m.message_id for m in chosen] == ["10", "20", "30"]
    assert chosen[0].text.endswith(" …") and len(chosen[0].text) < 900
    assert chosen[1:] == tuple(candidates[1:])
    tight = choose(
        candidates, trigger="50", after=None, exclude=frozenset(), max_messages=20, max_chars=500
    )
    assert [m.message_id for m in tight] == ["20", "30"]  # too little room left to cut one in


def test_a_message_after_the_trigger_belongs_to_a_later_turn() -> None:
    assert pick([said("1700000000.000100"), said("1700000002.000100")], trigger="1700000001.5") == [
        "1700000000.000100"
    ]


# -- gathering ---------------------------------------------------------------------------------


@dataclass
class MemoryContext:
    """The ContextStore port in memory, counting round trips."""

    marks: dict[str, ContextMark] = field(default_factory=dict)
    caches: dict[str, tuple[ContextMessage, ...]] = field(default_factory=dict)
    observed: dict[tuple[str, str], dict[str, ContextMessage]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    fail: bool = False

    async def load(
        self,
        thread_id: str,
        *,
        observed: tuple[str, str] | None = None,
        before: str = "",
        limit: int = 0,
    ) -> ContextState:
        self.calls.append("load")
        if self.fail:
            raise TransientStorageError("context read failed: ConnectionError")
        seen = sorted(
            (
                m
                for m in self.observed.get(observed or ("", ""), {}).values()
                if not before or message_order(m.message_id) < message_order(before)
            ),
            key=lambda m: message_order(m.message_id),
            reverse=True,
        )
        return ContextState(
            self.marks.get(thread_id), self.caches.get(thread_id), tuple(seen[:limit])
        )

    async def save(
        self,
        thread_id: str,
        *,
        mark: ContextMark,
        cache: Sequence[ContextMessage] | None = None,
    ) -> None:
        self.calls.append("save")
        self.marks[thread_id] = mark
        if cache is not None:
            self.caches[thread_id] = tuple(cache)

    async def observe(
        self, platform: str, place: str, message: ContextMessage, *, keep: int
    ) -> None:
        self.calls.append("observe")
        record = self.observed.setdefault((platform, place), {})
        record[message.message_id] = message


@dataclass
class Reader(RecordingAdapter):
    """A platform whose conversation holds `history`; `fault` makes the next read fail."""

    history: list[ContextMessage] = field(default_factory=list)
    requests: list[HistoryRequest] = field(default_factory=list)
    fault: Exception | None = None

    async def read_history(self, request: HistoryRequest) -> list[ContextMessage]:
        self.requests.append(request)
        if self.fault is not None:
            fault, self.fault = self.fault, None
            raise fault
        since = message_order(request.after) if request.after is not None else None
        return [
            m
            for m in self.history
            if message_order(m.message_id) < message_order(request.msg.provider_message_id)
            and (since is None or message_order(m.message_id) > since)
        ]


def message(mid: int, **kw: Any) -> InboundMessage:
    fields: dict[str, Any] = {
        "platform": Platform.SLACK,
        "workspace_id": "T1",
        "chat_id": "C1",
        "sender_id": "U1",
        "sender_name": "Ann",
        "text": f"message {mid}",
        "provider_message_id": str(mid),
        "thread_anchor": "1",
        "mentions_bot": True,
    }
    fields.update(kw)
    return InboundMessage(**fields)


def desk(store: MemoryContext | None, **kw: Any) -> ConversationHistory:
    options: dict[str, Any] = {
        "max_messages": 20,
        "max_chars": 8000,
        "timeout_s": 1.0,
        "observe_keep": 50,
        **kw,
    }
    return ConversationHistory(store, **options)


def ids(messages: Sequence[ContextMessage]) -> list[str]:
    return [m.message_id for m in messages]


async def test_a_dm_costs_no_store_call_and_no_read() -> None:
    store, reader = MemoryContext(), Reader(history=[said(5)])
    quoted = (said(3, replied_to=True), said(4, is_self=True, replied_to=True))
    dm = message(9, is_dm=True, thread_anchor=None, quoted=quoted)
    assert ids(await desk(store).gather(reader, "t1", Batch([dm]))) == ["3"]
    assert await desk(store).gather(reader, "t1", Batch([message(9, is_dm=True)])) == ()
    assert store.calls == [] and reader.requests == []


async def test_an_answer_to_a_question_gets_no_context() -> None:
    store, reader = MemoryContext(), Reader(history=[said(5)])
    batch = Batch([message(9)], resume=True)
    assert await desk(store).gather(reader, "t1", batch, resume=True) == ()
    assert store.calls == [] and reader.requests == []


async def test_a_cached_thread_still_asks_the_platform_for_what_came_after_the_mark() -> None:
    store, reader = MemoryContext(), Reader(history=[said(2), said(3), said(4)])
    history = desk(store)
    assert ids(await history.gather(reader, "t1", Batch([message(5)]))) == ["2", "3", "4"]
    assert store.marks["t1"] == ContextMark(at="5") and ids(store.caches["t1"]) == ["2", "3", "4"]
    reader.history.append(said(6, "said in between"))
    shown = await history.gather(reader, "t1", Batch([message(7), message(8)]))
    assert ids(shown) == ["6"]  # not addressed to the bot, so only the platform knows it
    assert [r.after for r in reader.requests] == [None, "5"]  # only what is newer than held
    assert store.marks["t1"] == ContextMark(at="8", previous="5")
    assert ids(store.caches["t1"]) == ["2", "3", "4", "6"]  # merged into what was held
    assert await history.gather(reader, "t1", Batch([message(7), message(8)])) == shown
    assert len(reader.requests) == 2  # the retried batch is served from the cache


async def test_catch_up_asks_the_platform_from_the_mark() -> None:
    store, reader = MemoryContext(), Reader(history=[said(2), said(6, "since then")])
    store.marks["t1"] = ContextMark(at="5")
    assert ids(await desk(store).gather(reader, "t1", Batch([message(7)]))) == ["6"]
    assert reader.requests[0].after == "5"


async def test_a_retried_batch_is_shown_what_its_first_attempt_was_shown() -> None:
    store, reader = MemoryContext(), Reader(history=[said(2), said(3)])
    history = desk(store)
    first = await history.gather(reader, "t1", Batch([message(5)]))
    calls = len(store.calls)
    assert await history.gather(reader, "t1", Batch([message(5)])) == first
    assert store.calls[calls:] == ["load"]  # nothing new to save


@pytest.mark.parametrize(
    ("fault", "result"),
    [
        (PlatformError("no", platform="slack", code="missing_scope"), "denied"),
        (PlatformRateLimited("429", platform="slack", retry_after=60.0), "rate_limited"),
        (PlatformError("slow", platform="slack", code="timeout"), "timeout"),
        (PlatformError("boom", platform="slack", code=500), "failed"),
    ],
)
async def test_a_failed_read_is_counted_and_the_next_turn_tries_again(
    fault: Exception, result: str
) -> None:
    store = MemoryContext()
    reader = Reader(history=[said(2)], fault=fault)
    counter = metrics.CONTEXT_READS.labels(platform="slack", result=result)
    before = counter._value.get()
    quoted = (said(1, replied_to=True),)
    shown = await desk(store).gather(reader, "t1", Batch([message(5, quoted=quoted)]))
    assert ids(shown) == ["1"]  # what the event carried still counts
    assert counter._value.get() == before + 1
    assert "t1" not in store.marks and "t1" not in store.caches
    assert ids(await desk(store).gather(reader, "t1", Batch([message(6)]))) == ["2"]


async def test_a_read_that_hangs_is_given_up_on() -> None:
    class Hanging(Reader):
        async def read_history(self, request: HistoryRequest) -> list[ContextMessage]:
            import asyncio

            await asyncio.sleep(30)
            return []

    store = MemoryContext()
    assert await desk(store, timeout_s=0.05).gather(Hanging(), "t1", Batch([message(5)])) == ()
    assert "t1" not in store.marks


async def test_a_store_failure_leaves_the_turn_what_the_event_carried() -> None:
    store = MemoryContext(fail=True)
    quoted = (said(1, replied_to=True),)
    shown = await desk(store).gather(Reader(), "t1", Batch([message(5, quoted=quoted)]))
    assert ids(shown) == ["1"]


async def test_without_a_store_or_a_reader_only_the_event_counts_and_nothing_is_stored() -> None:
    quoted = (said(1, replied_to=True),)
    telegram = message(5, platform=Platform.TELEGRAM, quoted=quoted)
    assert ids(await desk(None).gather(Reader(), "t1", Batch([telegram]))) == ["1"]
    store = MemoryContext()
    history = desk(store, observe_keep=0)
    assert ids(await history.gather(RecordingAdapter(), "t1", Batch([telegram]))) == ["1"]
    assert store.calls == []


async def test_a_telegram_group_turn_reads_the_observed_record_and_joins_it() -> None:
    store = MemoryContext()
    group = ("telegram", "-100")
    store.observed[group] = {m.message_id: m for m in (said(2), said(3, sender="Bob"))}
    msg = message(4, platform=Platform.TELEGRAM, chat_id="-100", thread_anchor="4")
    shown = await desk(store).gather(RecordingAdapter(), "t1", Batch([msg]))
    assert ids(shown) == ["2", "3"]
    assert set(store.observed[group]) == {"2", "3", "4"}  # the mention is recorded too
    assert store.marks["t1"] == ContextMark(at="4")


# -- observing ---------------------------------------------------------------------------------


class Access:
    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed
        self.asked = 0

    async def allows(self, msg: InboundMessage) -> bool:
        self.asked += 1
        return self.allowed


async def _through(gate: ObserveGate, msg: InboundMessage) -> tuple[Outcome, bool]:
    reached = False

    async def after(ctx: MessageContext) -> Outcome:
        nonlocal reached
        reached = True
        return Outcome.ANSWERED

    ctx = MessageContext(RecordingAdapter(), msg, "1-0", b"")
    return await gate(ctx, after), reached


def observed(mid: int, **kw: Any) -> InboundMessage:
    fields: dict[str, Any] = {"thread_anchor": None, **kw}
    return message(mid, platform=Platform.TELEGRAM, chat_id="-100", observed=True, **fields)


async def test_an_observed_message_is_recorded_and_finished_before_any_other_gate() -> None:
    store = MemoryContext()
    outcome, reached = await _through(ObserveGate(store, Access(True), keep=50), observed(7))
    assert (outcome, reached) == (Outcome.OBSERVED, False)
    assert list(store.observed[("telegram", "-100")]) == ["7"]
    topic = observed(8, is_topic=True, thread_anchor="3")
    await _through(ObserveGate(store, None, keep=50), topic)
    assert list(store.observed[("telegram", "-100:t3")]) == ["8"]


async def test_a_chat_that_is_not_admitted_leaves_no_record_and_gets_no_notice() -> None:
    store, access = MemoryContext(), Access(False)
    outcome, _ = await _through(ObserveGate(store, access, keep=50), observed(7))
    assert outcome is Outcome.OBSERVED and access.asked == 1 and store.observed == {}


async def test_with_observing_off_nothing_is_recorded_and_other_messages_pass() -> None:
    store = MemoryContext()
    assert await _through(ObserveGate(store, None, keep=0), observed(7)) == (
        Outcome.OBSERVED,
        False,
    )
    assert store.calls == []
    assert await _through(ObserveGate(store, None, keep=50), message(8)) == (
        Outcome.ANSWERED,
        True,
    )
    assert store.calls == []
