"""The adapter contract: what the manager relies on from every platform, run on all four.

Each test runs once per adapter (`telegram`, `slack`, `discord`, `console`), the real adapter and
SDK against its fake platform (`contract_harness.py`). The claims branch on the adapter's
`capabilities`, never on its class: a platform without buttons still shows the question, one
without edits skips the edit claim by name, one without reactions must merely not fail.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import AsyncIterator

import pytest

from channels.adapter import AckKind, Adapter, Capabilities, Chunk, QuestionPrompt
from channels.message import InboundMessage, Platform
from channels.render import render_chunks
from tests.integration.channels.contract_harness import HARNESSES, PLATFORMS, Harness
from tests.support import wait_until

QUESTION = "Which one do you mean?"
OPTIONS = ("alpha", "beta", "gamma")
_FENCE_LINE = re.compile(r"^```[\w+#.-]*$", re.MULTILINE)


@pytest.fixture(params=PLATFORMS)
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    started = HARNESSES[request.param]()
    await started.start()
    try:
        yield started
    finally:
        await started.close()


async def conversation(harness: Harness, where: str) -> InboundMessage:
    return await (harness.dm() if where == "dm" else harness.group())


def length(text: str, unit: str) -> int:
    return len(text.encode("utf-16-le")) // 2 if unit == "utf16" else len(text)


def words(text: str) -> list[str]:
    """The words of a message, ignoring code-fence lines (which chunking closes and reopens)."""
    return _FENCE_LINE.sub(" ", text).split()


def long_answer() -> str:
    """About 9,000 characters of plain prose, then a fenced Python block. One paragraph is
    longer than any platform's limit, so a cut must land inside it, close to the limit; every
    third word carries an emoji outside the BMP (two UTF-16 units), so counting in the wrong
    unit overshoots a UTF-16 limit there."""
    counter = itertools.count(1)
    paragraphs: list[str] = []
    while sum(len(p) + 2 for p in paragraphs) < 9000:
        count = 48 if len(paragraphs) == 1 else 6  # sentences: the second paragraph is ~5,000
        sentences = [" ".join(_word(next(counter)) for _ in range(12)) + "." for _ in range(count)]
        paragraphs.append(" ".join(sentences))
    code = "\n".join(f"def step_{i}(value):\n    return value + {i}\n" for i in range(30))
    return "\n\n".join(paragraphs) + f"\n\n```python\n{code}```\n\nThat is the whole answer."


def _word(n: int) -> str:
    return f"word{n}🚀" if n % 3 == 0 else f"word{n}"


# -- shape --------------------------------------------------------------------------------------


async def test_adapter_satisfies_the_protocol_with_frozen_capabilities(harness: Harness) -> None:
    adapter = harness.adapter
    assert isinstance(adapter, Adapter)
    assert isinstance(adapter.platform, Platform)
    caps = adapter.capabilities
    assert isinstance(caps, Capabilities)
    assert caps.max_len > 0 and caps.len_unit in ("chars", "utf16")
    if harness.platform_limit is not None:
        assert caps.max_len <= harness.platform_limit
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.max_len = 1  # type: ignore[misc]


# -- send ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["dm", "group"])
async def test_send_delivers_every_chunk_in_order_and_returns_one_id_per_chunk(
    harness: Harness, where: str
) -> None:
    adapter = harness.adapter
    target = (await conversation(harness, where)).target
    before = len(harness.received(target))
    texts = [f"Part {n} of the {where} answer." for n in (1, 2, 3)]
    chunks = [chunk for text in texts for chunk in render_chunks(text, adapter.capabilities)]

    ref = await adapter.send(target, chunks)

    arrived = harness.received(target)[before:]
    assert [r.text for r in arrived] == texts
    assert ref.chat_id == target.chat_id
    assert len(ref.message_ids) == len(chunks) == len(set(ref.message_ids))
    if all(r.message_id is not None for r in arrived):
        assert ref.message_ids == tuple(r.message_id for r in arrived)


async def test_long_answer_chunks_fit_the_platform_and_join_back_to_its_words(
    harness: Harness,
) -> None:
    adapter = harness.adapter
    caps = adapter.capabilities
    target = (await harness.group()).target
    before = len(harness.received(target))
    answer = long_answer()
    chunks = render_chunks(answer, caps)
    assert all(length(c.text, caps.len_unit) <= caps.max_len for c in chunks)

    ref = await adapter.send(target, chunks)

    arrived = harness.received(target)[before:]
    assert len(arrived) == len(chunks) == len(ref.message_ids)
    assert all(length(r.text, caps.len_unit) <= caps.max_len for r in arrived)
    assert words("\n".join(r.text for r in arrived)) == words(answer)
    assert words("\n".join(c.plain for c in chunks)) == words(answer)


# -- questions and edits ------------------------------------------------------------------------


async def test_ask_puts_one_button_per_option_on_the_last_message(harness: Harness) -> None:
    adapter = harness.adapter
    caps = adapter.capabilities
    msg = await harness.group()
    before = len(harness.received(msg.target))
    chunks = render_chunks("Some context first.", caps) + render_chunks(QUESTION, caps)
    prompt = QuestionPrompt(question_id="q1", options=OPTIONS, asker_id=msg.sender_id)

    ref = await adapter.ask(msg.target, chunks, prompt)

    arrived = harness.received(msg.target)[before:]
    assert len(arrived) == len(ref.message_ids) == len(chunks)
    assert QUESTION in arrived[-1].text
    if caps.buttons:
        assert harness.buttons(msg.target, ref.message_ids[-1]) == list(OPTIONS)
        assert all(harness.buttons(msg.target, mid) == [] for mid in ref.message_ids[:-1])


async def test_edit_replaces_the_text_and_drops_the_buttons(harness: Harness) -> None:
    adapter = harness.adapter
    caps = adapter.capabilities
    if not caps.can_edit:
        pytest.skip("capabilities.can_edit is False: this platform cannot edit a sent message")
    msg = await harness.group()
    question = render_chunks(QUESTION, caps)
    if caps.buttons:
        prompt = QuestionPrompt(question_id="q2", options=OPTIONS, asker_id=msg.sender_id)
        ref = await adapter.ask(msg.target, question, prompt)
    else:
        ref = await adapter.send(msg.target, question)
    message_id = ref.message_ids[-1]
    (answered,) = render_chunks(f"{QUESTION}\n\n✅ beta", caps)

    await adapter.edit(msg.target, message_id, answered)
    await adapter.edit(msg.target, message_id, answered)  # the same text again is no error

    shown = {r.message_id: r.text for r in harness.received(msg.target)}
    assert shown[message_id].startswith(QUESTION) and shown[message_id].endswith("✅ beta")
    assert harness.buttons(msg.target, message_id) == []


# -- signals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["dm", "group"])
async def test_queued_acknowledgement_leaves_a_visible_sign_where_reactions_exist(
    harness: Harness, where: str
) -> None:
    adapter = harness.adapter
    msg = await conversation(harness, where)
    before = len(harness.received(msg.target))

    await adapter.acknowledge(msg, AckKind.QUEUED)
    await adapter.acknowledge(msg, AckKind.RECEIVED)

    if adapter.capabilities.reactions:
        assert harness.reactions(msg) or len(harness.received(msg.target)) > before


@pytest.mark.parametrize("where", ["dm", "group"])
async def test_typing_is_an_async_context_that_signals_where_the_platform_has_a_signal(
    harness: Harness, where: str
) -> None:
    adapter = harness.adapter
    target = (await conversation(harness, where)).target
    running = harness.adapter_tasks()

    async with adapter.typing(target):
        if harness.typing_signals(target) is not None:
            await wait_until(lambda: harness.typing_signals(target))
    with pytest.raises(LookupError):  # an error inside the context is not swallowed
        async with adapter.typing(target):
            raise LookupError("from inside")

    await wait_until(lambda: harness.adapter_tasks() <= running)


async def test_private_notice_reaches_only_the_sender(harness: Harness) -> None:
    adapter = harness.adapter
    msg = await harness.group()
    public = harness.received(msg.target)
    notice = "Your link code is 4711."

    await adapter.notify(msg, notice, private=True)

    assert notice in harness.private_notices(msg)
    if harness.has_groups:
        assert harness.received(msg.target) == public


async def test_notice_in_a_dm_arrives_in_the_dm(harness: Harness) -> None:
    adapter = harness.adapter
    msg = await harness.dm()

    await adapter.notify(msg, "Linked to your account.", private=True)
    await adapter.notify(msg, "Nothing to stop here.")

    assert [r.text for r in harness.received(msg.target)][-2:] == [
        "Linked to your account.",
        "Nothing to stop here.",
    ]


# -- lifecycle ------------------------------------------------------------------------------------


async def test_stop_is_idempotent_and_leaves_no_adapter_task_running(harness: Harness) -> None:
    adapter = harness.adapter
    msg = await harness.dm()
    await adapter.send(msg.target, [Chunk(text="Bye for now.", plain="Bye for now.")])

    await adapter.stop()
    await adapter.stop()

    assert harness.adapter_tasks() == set()


async def test_stop_ends_a_typing_indicator_that_is_still_open(harness: Harness) -> None:
    adapter = harness.adapter
    target = (await harness.dm()).target

    async with adapter.typing(target):
        await adapter.stop()
        assert harness.adapter_tasks() == set()
