"""The asker-or-admin rule through the manager (real Redis, demo model, a recording adapter): in a
shared thread a typed answer is its asker's alone, as a press is, and `/stop`, `/new` and
`/queue MODE` act on someone's running answer only for that asker or an admin. Whose run it is
comes from the thread's queue in Redis, never from the message."""

from __future__ import annotations

import itertools

from channels.message import InboundMessage, Platform
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until

_ids = itertools.count(1)
_ANCHOR = "300.1"


def said(text: str, *, user: str, name: str, anchor: str = _ANCHOR) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="C1",
        sender_id=user,
        sender_name=name,
        text=text,
        provider_message_id=f"a{next(_ids)}",
        mentions_bot=True,
        thread_anchor=anchor,
    )


def alice(text: str) -> InboundMessage:
    return said(text, user="U1", name="alice")


def bob(text: str) -> InboundMessage:
    return said(text, user="U2", name="bob")


async def setup(make_manager, **overrides):  # type: ignore[no-untyped-def]
    manager = await make_manager(**overrides)
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    return manager, adapter


async def test_a_typed_answer_by_someone_else_does_not_answer_the_askers_question(
    make_manager,
) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(alice("choose a flavour"))
    await manager.idle()
    assert adapter.last_prompt() is not None
    await manager.deliver(bob("2"))
    await manager.idle()
    assert "for the person I asked" in adapter.texts()[-1]
    assert not any(t.startswith("You chose") for t in adapter.texts())
    await manager.deliver(alice("3"))  # the question is still open, for alice
    await manager.idle()
    assert adapter.texts()[-1] == "You chose: gamma."


async def test_stop_by_someone_else_is_refused_and_the_askers_stop_stops(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(alice("slow 20"))
    await wait_until(lambda: adapter.typing_count == 1)
    await manager.deliver(bob("/stop"))
    await wait_until(lambda: any("Only alice or an admin" in t for t in adapter.texts()))
    assert "Stopping the current answer." not in adapter.texts()
    await manager.deliver(alice("/stop"))
    await manager.idle(timeout=10)
    assert "Stopping the current answer." in adapter.texts() and "Stopped." in adapter.texts()


async def test_an_admin_may_stop_someone_elses_answer(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    adapter.admins.add("U3")
    await manager.deliver(alice("slow 20"))
    await wait_until(lambda: adapter.typing_count == 1)
    await manager.deliver(said("/stop", user="U3", name="carol"))
    await manager.idle(timeout=10)
    assert "Stopping the current answer." in adapter.texts() and "Stopped." in adapter.texts()


async def test_new_and_queue_mode_by_someone_else_are_refused_while_the_asker_is_answered(
    make_manager,
) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(alice("slow 20"))
    await wait_until(lambda: adapter.typing_count == 1)
    await manager.deliver(bob("/new"))
    await manager.deliver(bob("/queue reject"))
    await manager.deliver(bob("/queue"))  # only shows the mode: anyone may
    await wait_until(lambda: any(t.startswith("Busy mode:") for t in adapter.texts()))
    await wait_until(lambda: sum("Only alice or an admin" in t for t in adapter.texts()) == 2)
    assert not any("new conversation" in t for t in adapter.texts())
    assert not any(t.startswith("Busy mode: reject") for t in adapter.texts())
    await manager.deliver(alice("/stop"))
    await manager.idle(timeout=10)
    await manager.deliver(bob("/queue reject"))  # nothing runs now: nobody's answer
    await manager.idle()
    assert adapter.texts()[-1].startswith("Busy mode: reject")
