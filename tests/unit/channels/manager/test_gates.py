"""The gate chain on in-memory stores: what stops a message before its turn, and what the turn
receives. No network: the stores are stand-ins for the manager's ports."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.manager.codec import encode_message
from channels.manager.context import ChatOrder, MessageContext, Outcome
from channels.manager.gates.access import AccessAndRate
from channels.manager.gates.chain import build_chain
from channels.manager.gates.command_gates import LinkAndHelp
from channels.manager.gates.dedupe import DedupeGate
from channels.manager.gates.limits import InputLimits
from channels.manager.gates.thread import Routing
from channels.manager.replies.questions import QuestionDesk
from channels.manager.replies.responder import Responder
from channels.manager.routing import ThreadResolver
from channels.message import ButtonPress, InboundMessage, Platform, conversation_key
from tests.fakes.memory_ports import MemoryPorts
from tests.fakes.recording_adapter import RecordingAdapter


class _HelpOnly:
    """The command desk's pre-access side, as LinkAndHelp uses it."""

    def __init__(self, say: Responder) -> None:
        self._say = say

    async def pre_access(self, ctx: MessageContext, command: Any) -> None:
        await self._say.send_text(ctx.adapter, ctx.msg.target, "help text")


class Chain:
    def __init__(self, *, rate_limit: int = 20, admission: bool = False) -> None:
        say = Responder(typing_delay_s=0.3)
        self.adapter = RecordingAdapter()
        ports = MemoryPorts(rate_limit=rate_limit)
        self.threads = ports.threads
        self.admission = ports.admission
        self.reached: list[MessageContext] = []
        self.side: list[asyncio.Task[None]] = []

        async def turn(ctx: MessageContext) -> Outcome:
            self.reached.append(ctx)
            return Outcome.HANDED_OVER

        self.handle = build_chain(
            [
                DedupeGate(ports.dedupe, ports.admission if admission else None),
                AccessAndRate(None, ports.rate, say),
                LinkAndHelp(_HelpOnly(say)),  # type: ignore[arg-type]
                InputLimits(say, max_chars=100),
                Routing(
                    ThreadResolver(ports.threads),
                    QuestionDesk(ports.questions),
                    say,
                    lambda coro: self.side.append(asyncio.ensure_future(coro)),
                ),
            ],
            turn,
        )

    async def send(
        self, msg: InboundMessage, entry: str, *, order: ChatOrder | None = None
    ) -> Outcome:
        return await self.send_ctx(self.context(msg, entry, order=order))

    def context(
        self, msg: InboundMessage, entry: str, *, order: ChatOrder | None = None
    ) -> MessageContext:
        ctx = MessageContext(self.adapter, msg, entry, encode_message(msg))
        ctx.turn_order = order
        return ctx

    async def send_ctx(self, ctx: MessageContext) -> Outcome:
        outcome = await self.handle(ctx)
        await asyncio.gather(*self.side)
        return outcome


def msg(text: str, mid: str, **fields: Any) -> InboundMessage:
    base: dict[str, Any] = {
        "platform": Platform.SLACK,
        "workspace_id": "T1",
        "chat_id": "D1",
        "sender_id": "U1",
        "sender_name": "alice",
        "text": text,
        "provider_message_id": mid,
        "is_dm": True,
    }
    return InboundMessage(**{**base, **fields})


async def test_a_redelivered_message_stops_at_dedupe_but_its_own_entry_passes_again() -> None:
    chain = Chain()
    assert await chain.send(msg("hi", "m1"), "1-0") is Outcome.HANDED_OVER
    assert await chain.send(msg("hi", "m1"), "2-0") is Outcome.DUPLICATE  # the platform's retry
    assert await chain.send(msg("hi", "m1"), "1-0") is Outcome.HANDED_OVER  # reclaimed entry
    assert len(chain.reached) == 2


async def test_help_is_flood_limited_like_any_message() -> None:
    chain = Chain(rate_limit=3)
    outcomes = [await chain.send(msg("/help", f"h{n}"), f"{n}-0") for n in range(6)]
    assert outcomes == [Outcome.ANSWERED] * 6
    assert chain.adapter.texts()[:3] == ["help text"] * 3
    refusals = [s for s in chain.adapter.sent if "too fast" in s.text]
    assert refusals and refusals[0].target.reply_to_id == "h3"  # it replies to what it refuses


async def test_blank_and_oversized_messages_get_a_notice_and_no_turn() -> None:
    chain = Chain()
    assert await chain.send(msg("   ", "b1"), "1-0") is Outcome.ANSWERED
    assert await chain.send(msg("x" * 101, "b2"), "2-0") is Outcome.ANSWERED
    assert chain.reached == []
    assert "too long" in chain.adapter.texts()[-1]
    # even in a DM, each refusal is a reply to the message it refuses
    assert [s.target.reply_to_id for s in chain.adapter.sent] == ["b1", "b2"]


async def test_a_group_message_not_for_the_bot_is_ignored_and_a_dm_gets_a_thread() -> None:
    chain = Chain()
    chatter = msg("lunch?", "g1", is_dm=False, chat_id="C1", platform=Platform.TELEGRAM)
    assert await chain.send(chatter, "1-0") is Outcome.ANSWERED
    assert chain.reached == [] and await chain.threads.peek(conversation_key(chatter)) is None
    assert await chain.send(msg("hello", "d1"), "2-0") is Outcome.HANDED_OVER
    (ctx,) = chain.reached
    assert ctx.thread_id == await chain.threads.peek(ctx.conversation)


async def test_a_press_on_a_question_that_is_gone_is_answered_privately_and_stops() -> None:
    chain = Chain()
    press = msg("", "p1", button=ButtonPress("no-such-question", 0, "cb1"))
    assert await chain.send(press, "1-0") is Outcome.ANSWERED
    assert chain.adapter.button_answers == [("U1", "This question is no longer open.")]
    assert chain.reached == []


async def test_a_message_behind_a_new_in_its_chat_is_routed_after_it_so_it_starts_afresh() -> None:
    chain = Chain()
    assert await chain.send(msg("hello", "d1"), "1-0") is Outcome.HANDED_OVER
    old = chain.reached[0].thread_id
    new_command = ChatOrder(after=None, chat="slack:D1")  # a `/new` still on its way
    ctx = chain.context(msg("and now?", "d2"), "2-0", order=ChatOrder(after=new_command.done))
    routed = asyncio.create_task(chain.send_ctx(ctx))
    await asyncio.sleep(0.05)
    assert not routed.done()
    fresh = await chain.threads.start_new(ctx.conversation)  # what the `/new` does
    new_command.done.set()
    assert await routed is Outcome.HANDED_OVER
    assert ctx.thread_id == fresh != old


async def test_a_dms_thread_comes_with_its_admission_unless_an_earlier_message_is_on_its_way() -> (
    None
):
    chain = Chain(admission=True)
    assert await chain.send(msg("hello", "d1"), "1-0") is Outcome.HANDED_OVER
    first = chain.reached[0]
    assert chain.admission.asked == [first.conversation]
    assert first.thread_id == await chain.threads.peek(first.conversation)

    earlier = ChatOrder(after=None, chat="slack:D1")
    ctx = chain.context(msg("again", "d2"), "2-0", order=ChatOrder(after=earlier.done))
    routed = asyncio.create_task(chain.send_ctx(ctx))
    await asyncio.sleep(0.05)
    assert chain.admission.asked[-1] is None  # claimed and counted; the thread read waits
    earlier.done.set()
    assert await routed is Outcome.HANDED_OVER
    assert ctx.thread_id == first.thread_id

    group = msg("@bot hi", "g1", is_dm=False, chat_id="C1", mentions_bot=True)
    assert await chain.send(group, "3-0") is Outcome.HANDED_OVER
    assert chain.admission.asked[-1] is None  # a group's conversation may depend on bindings
