"""The manager end to end: real Redis, the demo model, a recording adapter on the platform side."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import replace

import pytest

from channels.adapter import AckKind
from channels.manager import encode_message
from channels.message import ButtonPress, InboundMessage, Platform
from storage import Keys, ThreadMap, ThreadQueue
from tests.fakes.recording_adapter import RecordingAdapter
from tests.support import wait_until

_ids = itertools.count(1)


def dm(
    text: str, *, chat: str = "D1", user: str = "U1", name: str = "alice", mid: str | None = None
) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=chat,
        sender_id=user,
        sender_name=name,
        text=text,
        provider_message_id=mid or f"m{next(_ids)}",
        is_dm=True,
    )


def in_channel(text: str, *, anchor: str, user: str, name: str) -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="C1",
        sender_id=user,
        sender_name=name,
        text=text,
        provider_message_id=f"m{next(_ids)}",
        mentions_bot=True,
        thread_anchor=anchor,
    )


async def setup(make_manager, **overrides):  # type: ignore[no-untyped-def]
    manager = await make_manager(**overrides)
    adapter = RecordingAdapter(deliver=manager.deliver)
    manager.register(adapter)
    return manager, adapter


async def test_message_gets_one_clean_reply(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("hello there friend"))
    await manager.idle()
    assert adapter.texts() == ["You said: hello there friend"]
    assert adapter.typing_count == 0  # answered before a typing hint would have helped
    assert [kind for _, kind in adapter.acks] == [AckKind.RECEIVED]


async def test_redelivered_message_gets_one_reply(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    msg = dm("echo once", mid="same-id")
    await asyncio.gather(*(manager.deliver(msg) for _ in range(5)))
    await manager.idle()
    await manager.deliver(msg)
    await manager.idle()
    assert adapter.texts() == ["once"]


async def test_conversation_remembers_earlier_messages(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    for text in ("first words", "second words", "recall"):
        await manager.deliver(dm(text))
        await manager.idle()
    assert adapter.texts()[-1] == "You first said: first words"


async def test_concurrent_first_messages_share_one_thread(make_manager, redis, keys: Keys) -> None:
    manager, adapter = await setup(make_manager)
    await asyncio.gather(
        manager.deliver(dm("echo a", chat="D9")), manager.deliver(dm("echo b", chat="D9"))
    )
    await manager.idle()
    thread_id = await ThreadMap(redis, keys=keys).peek("slack:T1:D9")
    assert thread_id is not None
    # both messages were answered (the loser of the lock race queued, then answered in a
    # follow-up or merged into the winner's turn), and both live in the one thread
    answered = "\n".join(adapter.texts())
    assert "a" in answered.split() and "b" in answered.split(), answered
    await manager.deliver(dm("recall", chat="D9"))
    await manager.idle()
    assert adapter.texts()[-1].startswith("You first said: echo ")


async def test_busy_thread_queues_acknowledges_and_answers_in_one_follow_up(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(in_channel("slow 0.6", anchor="100.1", user="U1", name="alice"))
    await wait_until(lambda: adapter.typing_count == 1)
    first = in_channel("echo x", anchor="100.1", user="U2", name="bob")
    second = in_channel("and another thing", anchor="100.1", user="U3", name="carol")
    await manager.deliver(first)
    await wait_until(lambda: (first.provider_message_id, AckKind.QUEUED) in adapter.acks)
    await manager.deliver(second)
    await manager.idle()
    queued = [mid for mid, kind in adapter.acks if kind is AckKind.QUEUED]
    assert queued == [first.provider_message_id, second.provider_message_id]
    assert adapter.texts()[0] == "Done after 0.6 s."
    assert len(adapter.sent) == 2, adapter.texts()
    follow_up = adapter.texts()[1]
    assert "bob: echo x" in follow_up and "carol: and another thing" in follow_up
    assert follow_up.index("bob") < follow_up.index("carol")
    assert adapter.sent[1].target.reply_to_id == second.provider_message_id


async def test_busy_reject_mode_answers_with_a_notice(make_manager) -> None:
    manager, adapter = await setup(make_manager, busy="reject")
    await manager.deliver(dm("slow 0.4"))
    await wait_until(lambda: adapter.typing_count == 1)
    refused = dm("are you there")
    await manager.deliver(refused)
    await manager.idle()
    assert [t for t in adapter.texts() if "still working" not in t] == ["Done after 0.4 s."]
    [refusal] = [s for s in adapter.sent if "still working" in s.text]
    assert refusal.target.reply_to_id == refused.provider_message_id  # says which one


async def test_crashed_worker_leaves_nothing_stuck(make_manager, redis, keys: Keys) -> None:
    manager, adapter = await setup(make_manager)
    threads = ThreadMap(redis, keys=keys)
    thread_id = await threads.resolve("slack:T1:D1")
    # a worker that took the lock with a message in the queue, then died without a word
    dead = ThreadQueue(redis, keys=keys, lock_ttl_s=0.3)
    orphan = encode_message(dm("queued before crash"))
    entry = f"{int(time.time() * 1000)}-0"  # an inbox id: arrived just now
    assert (await dead.submit(thread_id, entry, orphan, "dead-token")).lock is not None
    await wait_until(lambda: _not_locked(redis, keys, thread_id))
    await manager.deliver(dm("echo after"))
    await manager.idle()
    assert len(adapter.sent) == 1
    assert "queued before crash" in adapter.texts()[0] and "after" in adapter.texts()[0]
    state = await ThreadQueue(redis, keys=keys).state(thread_id)
    assert state.unanswered == 0 and not state.busy


async def _not_locked(redis, keys: Keys, thread_id: str) -> bool:  # type: ignore[no-untyped-def]
    return not await redis.exists(keys.lock(thread_id))


async def test_clarification_is_answered_by_the_next_message(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("choose a flavour"))
    await manager.idle()
    asked = adapter.last_prompt()
    assert asked is not None and asked.prompt is not None
    assert asked.prompt.options == ("alpha", "beta", "gamma")
    assert "Which one do you mean?" in asked.text and "1. alpha" in asked.text
    await manager.deliver(dm("gamma please"))
    await manager.idle()
    assert adapter.texts()[-1] == "You chose: gamma please."


async def test_clarification_is_answered_by_number(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("choose one"))
    await manager.idle()
    await manager.deliver(dm("2"))
    await manager.idle()
    assert adapter.texts()[-1] == "You chose: beta."


async def test_button_press_by_asker_resumes_and_stranger_is_refused(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(in_channel("choose", anchor="200.1", user="U1", name="alice"))
    await manager.idle()
    asked = adapter.last_prompt()
    assert asked is not None and asked.prompt is not None
    qid = asked.prompt.question_id

    def press(user: str, index: int) -> InboundMessage:
        return InboundMessage(
            platform=Platform.SLACK,
            workspace_id="T1",
            chat_id="C1",
            sender_id=user,
            sender_name=user,
            text="",
            provider_message_id=asked.message_id,
            thread_anchor="200.1",
            button=ButtonPress(qid, index, interaction_id=f"i-{user}-{index}"),
        )

    await manager.deliver(press("U2", 0))
    await manager.idle()
    assert adapter.button_answers == [("U2", "Only the person who asked can answer this question.")]
    await manager.deliver(press("U1", 1))
    await manager.idle()
    assert adapter.button_answers[-1] == ("U1", None)
    assert (
        adapter.edits
        and adapter.edits[-1][0] == asked.message_id
        and "beta" in adapter.edits[-1][1]
    )
    assert adapter.texts()[-1] == "You chose: beta."
    await manager.deliver(press("U1", 2))
    await manager.idle()
    assert adapter.button_answers[-1] == ("U1", "This question is no longer open.")


async def test_new_resets_only_its_own_conversation(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    for chat in ("DA", "DB"):
        await manager.deliver(dm(f"echo start {chat}", chat=chat))
        await manager.idle()
    await manager.deliver(dm("/new", chat="DA"))
    await manager.idle()
    assert "new conversation" in adapter.texts()[-1]
    await manager.deliver(dm("recall", chat="DA"))
    await manager.idle()
    assert adapter.texts()[-1] == "You first said: recall"
    await manager.deliver(dm("recall", chat="DB"))
    await manager.idle()
    assert adapter.texts()[-1] == "You first said: echo start DB"


async def test_stop_cancels_the_running_turn_and_is_idempotent(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("slow 20"))
    await wait_until(lambda: adapter.typing_count == 1)
    await manager.deliver(dm("/stop"))
    await manager.idle(timeout=10)
    texts = adapter.texts()
    assert "Stopping the current answer." in texts and "Stopped." in texts
    await manager.deliver(dm("/stop"))
    await manager.idle()
    assert adapter.texts()[-1] == "Nothing is running here."


async def test_status_reports_thread_and_model(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("hello"))
    await manager.idle()
    await manager.deliver(dm("/status"))
    await manager.idle()
    status = adapter.texts()[-1]
    assert "Busy: no" in status and "Queued messages: 0" in status and "Model: demo" in status
    assert "Tools: ask_clarification, current_time" in status


async def test_unknown_command_gets_help(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("/frobnicate now"))
    await manager.idle()
    assert "Unknown command" in adapter.texts()[-1]
    assert "/switchboard new" in adapter.texts()[-1]  # the help of the platform it came from


async def test_model_failure_shows_reference_id_not_a_traceback(make_manager, caplog) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("boom"))
    await manager.idle()
    text = adapter.texts()[-1]
    match = re.search(r"\(ref ([0-9a-f]{8})\)", text)
    assert match, text
    assert "Traceback" not in text and "RuntimeError" not in text


async def test_flood_gets_one_notice_per_window(make_manager) -> None:
    manager, adapter = await setup(make_manager, rate_limit_per_minute=3)
    for i in range(7):
        await manager.deliver(dm(f"echo n{i}"))
        await manager.idle()
    assert [t for t in adapter.texts() if "too fast" not in t] == ["n0", "n1", "n2"]
    assert len([t for t in adapter.texts() if "too fast" in t]) == 1


async def test_twin_deliveries_count_once_against_the_flood_limit(make_manager) -> None:
    """Slack sends a mention as `message` and `app_mention` (two event ids, one message): one
    answer, and the twin costs the sender nothing of their flood limit."""
    manager, adapter = await setup(make_manager, rate_limit_per_minute=3)
    for i in range(3):
        message = dm(f"echo n{i}", mid=f"twin{i}")
        await manager.deliver(replace(message, event_ids=(f"Ev{i}a",)))
        await manager.deliver(replace(message, event_ids=(f"Ev{i}b",)))
        await manager.idle()
    assert adapter.texts() == ["n0", "n1", "n2"]


@pytest.mark.parametrize("text", ["", "   "])
async def test_blank_message_gets_a_text_only_notice(make_manager, text: str) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm(text))
    await manager.idle()
    assert adapter.texts() == ["I can only read text for now."]


async def test_status_as_a_reply_in_a_group_chain_reports_that_chains_thread(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(in_channel("slow 0.5", anchor="300.1", user="U1", name="alice"))
    await wait_until(lambda: adapter.typing_count == 1)
    await manager.idle()
    bot_reply_id = adapter.sent[-1].message_id
    status = InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id="C1",
        sender_id="U1",
        sender_name="alice",
        text="/status",
        provider_message_id="m-status",
        reply_to_id=bot_reply_id,
        reply_to_bot=True,
        thread_anchor="999.9",
    )
    await manager.deliver(status)
    await manager.idle()
    assert adapter.texts()[-1].startswith("Thread: ")


async def test_two_workers_share_one_thread_lock_and_queue(make_manager) -> None:
    # Two workers on one Redis share the inbox: either may take an entry.
    worker_a, adapter_a = await setup(make_manager)
    worker_b, adapter_b = await setup(make_manager)
    await worker_a.deliver(dm("slow 0.5", chat="DW"))
    await wait_until(lambda: adapter_a.typing_count + adapter_b.typing_count == 1)
    holder, other = (adapter_a, adapter_b) if adapter_a.typing_count else (adapter_b, adapter_a)
    late = dm("echo from the other worker", chat="DW")
    await worker_b.deliver(late)
    await worker_a.idle()
    await worker_b.idle()
    assert (late.provider_message_id, AckKind.QUEUED) in holder.acks + other.acks
    assert other.sent == []
    # the worker holding the thread answered the queued message in its follow-up turn
    assert holder.texts() == ["Done after 0.5 s.", "from the other worker"]


async def test_oversized_message_gets_a_notice_and_never_reaches_the_agent(make_manager) -> None:
    manager, adapter = await setup(make_manager, max_input_chars=1000)
    await manager.deliver(dm("echo " + "z" * 2000))
    await manager.idle()
    assert len(adapter.sent) == 1
    assert "too long" in adapter.texts()[0] and "2,005 characters" in adapter.texts()[0]
    assert adapter.typing_count == 0


async def test_typing_shows_once_a_turn_outlasts_the_delay(make_manager) -> None:
    manager, adapter = await setup(make_manager)
    await manager.deliver(dm("slow 0.5"))
    await wait_until(lambda: adapter.typing_count == 1)
    assert adapter.sent == []  # the hint is up while the turn still runs
    await manager.idle()
    assert adapter.texts() == ["Done after 0.5 s."]


async def test_commands_that_grant_access_are_still_flood_limited(make_manager) -> None:
    manager, adapter = await setup(make_manager, access="linked")
    for n in range(40):
        await manager.deliver(dm("/help", chat="DS", user="U-stranger", mid=f"h{n}"))
    await manager.idle()
    helps = [t for t in adapter.texts() if "Commands:" in t]
    too_fast = [t for t in adapter.texts() if "too fast" in t]
    assert len(helps) == 20  # SWITCHBOARD_RATE_LIMIT per minute
    assert len(too_fast) == 1  # then one notice, then silence


async def test_an_entry_for_a_platform_not_served_here_is_left_for_a_process_that_serves_it(
    make_manager, redis, prefix
) -> None:
    manager, slack = await setup(make_manager, lock_ttl_s=1.0)
    telegram_msg = replace(dm("echo for-telegram", mid="tg-1"), platform=Platform.TELEGRAM)
    await manager.deliver(telegram_msg)
    await manager.deliver(dm("echo for-slack"))
    await wait_until(lambda: slack.texts() == ["for-slack"])

    async def only_telegram_left() -> bool:  # the Slack entry is finished just after its reply
        return await redis.xlen(f"{prefix}inbox") == 1

    # the Telegram entry is neither answered nor discarded: it waits in the inbox
    await wait_until(only_telegram_left)
    telegram = RecordingAdapter(platform=Platform.TELEGRAM)
    manager.register(telegram)  # as if a process serving Telegram took the entry over
    await wait_until(lambda: telegram.texts() == ["for-telegram"], timeout=30)
    await manager.idle()
    assert slack.texts() == ["for-slack"]
