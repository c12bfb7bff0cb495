"""The Discord adapter on its own: real discord.py against the fake Discord (REST + gateway) on
127.0.0.1, with a recording `deliver` standing in for the manager."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from channels.adapter import AckKind, Chunk, QuestionPrompt
from channels.discord import DiscordAdapter
from channels.message import InboundMessage
from switchboard.errors import PlatformAuthError, PlatformError, StorageError
from tests.fakes.discord_server import FakeDiscord
from tests.support import wait_until


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
def inbox() -> list[InboundMessage]:
    return []


def make_adapter(fake: FakeDiscord, inbox: list[InboundMessage], **kw: object) -> DiscordAdapter:
    async def deliver(msg: InboundMessage) -> None:
        inbox.append(msg)

    options: dict[str, object] = {
        "token": fake.token,
        "api_base": fake.api_base,
        "guild_ready_timeout": 0.05,
        **kw,
    }
    return DiscordAdapter(deliver=deliver, **options)  # type: ignore[arg-type]


@pytest.fixture
async def adapter(fake: FakeDiscord, inbox: list[InboundMessage]) -> AsyncIterator[DiscordAdapter]:
    adapter = make_adapter(fake, inbox)
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.stop()


def chunk(text: str) -> Chunk:
    return Chunk(text=text, plain=text)


def at_bot(fake: FakeDiscord, text: str) -> str:
    return f"<@{fake.bot['id']}> {text}"


async def test_start_logs_in_discovers_gateway_and_waits_for_ready(
    fake: FakeDiscord, adapter: DiscordAdapter
) -> None:
    assert fake.calls_to("GET", "/users/@me") and fake.calls_to("GET", "/gateway/bot")
    assert fake.identifies == 1 and fake.heartbeats >= 1


async def test_explicit_gateway_url_is_used_without_discovery(
    fake: FakeDiscord, inbox: list[InboundMessage]
) -> None:
    adapter = make_adapter(fake, inbox, gateway_url=fake.gateway_url)
    await adapter.start()
    await adapter.stop()
    await adapter.stop()  # idempotent
    assert fake.identifies == 1 and not fake.calls_to("GET", "/gateway/bot")


async def test_rejected_token_raises_auth_error(
    fake: FakeDiscord, inbox: list[InboundMessage]
) -> None:
    adapter = make_adapter(fake, inbox, token="another-token")
    with pytest.raises(PlatformAuthError) as caught:
        await adapter.start()
    assert "another-token" not in str(caught.value)


async def test_dm_is_delivered_as_its_own_conversation(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    sent = await fake.user_message("hello", dm=True)
    await wait_until(lambda: inbox)
    msg = inbox[0]
    assert msg.is_dm and msg.chat_id == sent["channel_id"] and msg.text == "hello"
    assert not fake.calls_to("POST", r"/channels/\d+/messages/\d+/threads")


async def test_mention_creates_a_thread_before_delivery(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    sent = await fake.user_message(at_bot(fake, "plan the launch\nwith details"))
    await wait_until(lambda: inbox)
    msg = inbox[0]
    assert msg.chat_id == sent["id"] and msg.chat_id in fake.threads
    assert (msg.workspace_id, msg.text) == (fake.guild_id, "plan the launch\nwith details")
    [call] = fake.calls_to("POST", rf"/channels/{fake.channel_id}/messages/{sent['id']}/threads")
    assert call.json["name"] == "plan the launch"

    await adapter.send(msg.target, [chunk("first"), chunk("second")])
    replies = fake.bot_messages(msg.chat_id)
    assert [m["content"] for m in replies] == ["first", "second"]
    assert all("message_reference" not in m for m in replies)  # the starter lives in the parent


async def test_follow_up_in_bot_thread_needs_no_mention(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    first = await fake.user_message(at_bot(fake, "start"))
    await wait_until(lambda: inbox)
    follow = await fake.user_message("and then?", channel_id=first["id"])
    await wait_until(lambda: len(inbox) == 2)
    assert inbox[1].chat_id == first["id"] and inbox[1].text == "and then?"
    assert inbox[1].provider_message_id == follow["id"]
    await adapter.send(inbox[1].target, [chunk("reply")])
    [reply] = fake.bot_messages(first["id"])
    assert str(reply["message_reference"]["message_id"]) == follow["id"]


async def test_thread_owned_by_bot_is_recognised_after_a_restart(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    first = await fake.user_message(at_bot(fake, "start"))
    await wait_until(lambda: inbox)
    await adapter.stop()
    fresh = make_adapter(fake, inbox)
    await fresh.start()
    try:
        await fake.user_message("still there?", channel_id=first["id"])
        await wait_until(lambda: len(inbox) == 2)
        assert inbox[1].chat_id == first["id"]
    finally:
        await fresh.stop()


async def test_unmentioned_channel_messages_and_bots_are_ignored(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message("just chatting")
    await fake.user_message(at_bot(fake, "from a bot"), author=fake.other_bot)
    await fake.user_message("bot dm", author=fake.other_bot, dm=True)
    marker = await fake.user_message("marker", dm=True)
    await wait_until(lambda: inbox)
    assert [m.provider_message_id for m in inbox] == [marker["id"]]
    assert not fake.calls_to("POST", r"/channels/\d+/messages/\d+/threads")


async def test_thread_creation_failure_falls_back_to_a_channel_reply(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    fake.thread_failure = (403, 50013, "Missing Permissions")
    sent = await fake.user_message(at_bot(fake, "help"))
    await wait_until(lambda: inbox)
    msg = inbox[0]
    assert msg.chat_id == fake.channel_id and msg.target.reply_to_id == sent["id"]
    await adapter.send(msg.target, [chunk("here")])
    [reply] = fake.bot_messages(fake.channel_id)
    assert str(reply["message_reference"]["message_id"]) == sent["id"]


async def test_duplicate_mention_after_resume_reuses_the_thread(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    sent = await fake.user_message(at_bot(fake, "once"))
    await wait_until(lambda: inbox)
    await fake.reconnect(replay=[sent])
    await wait_until(lambda: len(inbox) == 2)
    assert inbox[0].dedupe_ids == inbox[1].dedupe_ids
    assert len(fake.calls_to("POST", r"/channels/\d+/messages/\d+/threads")) == 1
    assert fake.identifies == 1 and fake.resumes == 1


async def test_replayed_mention_reuses_the_thread_after_a_restart(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    sent = await fake.user_message(at_bot(fake, "once"))
    await wait_until(lambda: inbox)
    await adapter.stop()
    fresh = make_adapter(fake, inbox)  # remembers no thread: Discord's "already created" tells it
    await fresh.start()
    try:
        await fake.dispatch("MESSAGE_CREATE", sent)
        await wait_until(lambda: len(inbox) == 2)
        assert inbox[1].chat_id == sent["id"] and inbox[0].dedupe_ids == inbox[1].dedupe_ids
        assert len(fake.threads) == 1
    finally:
        await fresh.stop()


async def test_sends_never_allow_mentions(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message("hi", dm=True)
    await wait_until(lambda: inbox)
    await adapter.send(inbox[0].target, [chunk("@everyone <@&1> hi")])
    [call] = fake.calls_to("POST", rf"/channels/{inbox[0].chat_id}/messages")
    assert call.json["allowed_mentions"] == {"parse": []}


async def test_question_buttons_press_and_answer_edit(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message(at_bot(fake, "choose"))
    await wait_until(lambda: inbox)
    target = inbox[0].target
    prompt = QuestionPrompt(question_id="qq1", options=("alpha", "beta"), asker_id="x")
    ref = await adapter.ask(target, [chunk("Which?")], prompt)
    question = fake.messages[ref.message_ids[-1]]
    buttons = question["components"][0]["components"]
    assert [(b["label"], b["custom_id"]) for b in buttons] == [
        ("alpha", "q:qq1:0"),
        ("beta", "q:qq1:1"),
    ]

    pressed = await fake.press(question, "q:qq1:1", user=fake.bob)
    await wait_until(lambda: len(inbox) == 2)
    press = inbox[1]
    assert press.button is not None and press.button.option_index == 1
    assert (press.sender_id, press.chat_id) == (fake.bob["id"], target.chat_id)
    [callback] = fake.calls_to("POST", rf"/interactions/{pressed['id']}/[^/]+/callback")
    assert callback.json["type"] == 6  # deferred update: acknowledged within the deadline

    await adapter.answer_button(press, "Only Alice can answer this question.")
    await wait_until(lambda: fake.followups)
    assert [(f.user_id, f.ephemeral) for f in fake.followups] == [(fake.bob["id"], True)]
    await adapter.answer_button(press, None)
    assert len(fake.followups) == 1

    await adapter.edit(target, question["id"], chunk("Which?\n\n✅ beta"))
    assert question["content"] == "Which?\n\n✅ beta" and question["components"] == []
    [edit] = fake.calls_to("PATCH", rf"/channels/{target.chat_id}/messages/{question['id']}")
    assert edit.json["allowed_mentions"] == {"parse": []}


async def test_a_press_on_a_button_we_never_made_is_answered_privately_and_not_delivered(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    """discord.py's view store holds none of our views, so nobody else answers it: left alone,
    Discord shows the presser "This interaction failed"."""
    await fake.user_message("hi", dm=True)
    await wait_until(lambda: inbox)
    ref = await adapter.send(inbox[0].target, [chunk("x")])
    pressed = await fake.press(fake.messages[ref.message_ids[0]], "not-ours")
    marker = await fake.user_message("marker", dm=True)
    await wait_until(lambda: len(inbox) == 2)
    assert inbox[1].provider_message_id == marker["id"]
    await wait_until(lambda: fake.callbacks)
    [callback] = fake.callbacks
    assert (callback.interaction_id, callback.type, callback.ephemeral) == (pressed["id"], 4, True)
    assert "no longer" in callback.content


async def test_an_event_discord_py_cannot_parse_is_skipped_not_fatal(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message("hi", dm=True)
    await wait_until(lambda: inbox)
    ref = await adapter.send(inbox[0].target, [chunk("x")])
    pressed = await fake.press(fake.messages[ref.message_ids[0]], "someone-elses-button")
    broken = {k: v for k, v in pressed.items() if k != "attachment_size_limit"}
    broken["id"] = broken["token"] = "999"
    await fake.dispatch("INTERACTION_CREATE", broken)
    marker = await fake.user_message("still listening?", dm=True)
    await wait_until(lambda: len(inbox) == 2)
    assert inbox[1].provider_message_id == marker["id"]
    assert adapter.healthy and fake.identifies == 1


async def test_a_dead_gateway_is_restarted_and_reported_unhealthy_meanwhile(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    assert adapter.healthy
    await fake.drop(4012)
    await wait_until(lambda: not adapter.healthy)
    await wait_until(lambda: adapter.healthy and fake.identifies == 2, timeout=15)
    sent = await fake.user_message("after the restart", dm=True)
    await wait_until(lambda: inbox)
    assert inbox[0].provider_message_id == sent["id"]


async def test_queued_acknowledgement_reacts_on_the_message_where_it_lives(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    first = await fake.user_message(at_bot(fake, "start"))
    await wait_until(lambda: inbox)
    await adapter.acknowledge(inbox[0], AckKind.QUEUED)
    assert fake.calls_to(
        "PUT", rf"/channels/{fake.channel_id}/messages/{first['id']}/reactions/[^/]+/@me"
    )


async def test_typing_is_shown_in_the_target_channel(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message("hi", dm=True)
    await wait_until(lambda: inbox)
    async with adapter.typing(inbox[0].target):
        pass
    assert fake.calls_to("POST", rf"/channels/{inbox[0].chat_id}/typing")


async def test_private_notice_goes_to_dm_and_never_to_the_channel(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message(at_bot(fake, "link"))
    await wait_until(lambda: inbox)
    msg = inbox[0]
    assert await adapter.notify(msg, "secret link", private=True)
    assert [m["content"] for m in fake.bot_messages(fake.dm_channel(fake.alice))] == ["secret link"]
    fake.dm_closed.add(fake.alice["id"])
    assert not await adapter.notify(msg, "second link", private=True)
    (told,) = fake.bot_messages(msg.chat_id)
    assert told["content"] == (
        f"<@{fake.alice['id']}>, I couldn't message you privately: allow direct messages from "
        "this server's members (its Privacy Settings), then ask me here again."
    )


async def test_workspace_admin_is_manage_server(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message(at_bot(fake, "a"), author=fake.carol)
    await fake.user_message(at_bot(fake, "b"), author=fake.bob)
    await wait_until(lambda: len(inbox) == 2)
    by_sender = {m.sender_id: m for m in inbox}
    assert await adapter.is_workspace_admin(by_sender[fake.carol["id"]])
    assert not await adapter.is_workspace_admin(by_sender[fake.bob["id"]])


async def test_token_never_reaches_the_logs(
    fake: FakeDiscord,
    inbox: list[InboundMessage],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    adapter = make_adapter(fake, inbox)
    await adapter.start()
    await fake.user_message(at_bot(fake, "hi"))
    await wait_until(lambda: inbox)
    await adapter.send(inbox[0].target, [chunk("hello")])
    await fake.reconnect()
    await adapter.stop()
    assert fake.calls and "MESSAGE_CREATE" in caplog.text  # debug logging was on
    assert fake.token not in caplog.text and fake.token not in capsys.readouterr().out


async def test_api_errors_are_translated(
    fake: FakeDiscord, adapter: DiscordAdapter, inbox: list[InboundMessage]
) -> None:
    await fake.user_message("hi", dm=True)
    await wait_until(lambda: inbox)
    fake.dm_closed.add(fake.alice["id"])
    with pytest.raises(PlatformError) as caught:
        await adapter.send(inbox[0].target, [chunk("x")])
    assert caught.value.code == 50007 and caught.value.platform == "discord"


async def test_an_inbox_outage_pauses_the_gateway_at_the_bound_and_loses_nothing(
    fake: FakeDiscord,
) -> None:
    taken: list[str] = []
    attempts: Counter[str] = Counter()
    outage = [True]

    async def deliver(msg: InboundMessage) -> None:
        attempts[msg.text] += 1
        if outage[0]:
            raise StorageError("inbox append failed: ConnectionError")
        taken.append(msg.text)

    adapter = DiscordAdapter(
        token=fake.token,
        api_base=fake.api_base,
        guild_ready_timeout=0.05,
        deliver=deliver,
        max_waiting=4,
    )
    await adapter.start()
    try:
        with capture_logs() as logs:
            for n in range(12):
                await fake.user_message(f"m{n}", dm=True)

            def retried_while_paused() -> bool:  # long enough for unread events to show up
                return len(attempts) >= 4 and min(attempts.values()) >= 3

            await wait_until(retried_while_paused)
            assert sorted(attempts) == ["m0", "m1", "m2", "m3"]  # the rest was not read
            assert _waiting() == 4
            outage[0] = False
            await wait_until(lambda: len(taken) == 12)
        assert sorted(taken) == sorted(f"m{n}" for n in range(12))
        assert _waiting() == 0
        # Paused, resumed; a burst read at once after the outage may pause it briefly again.
        events = [e["event"] for e in logs if e["event"].startswith("discord.ingress")]
        assert events[:2] == ["discord.ingress_paused", "discord.ingress_resumed"]
        assert events[::2] == ["discord.ingress_paused"] * len(events[::2])
        assert events[-1] == "discord.ingress_resumed"
    finally:
        await adapter.stop()


def _waiting() -> float | None:
    return REGISTRY.get_sample_value("switchboard_ingress_waiting", {"platform": "discord"})


async def test_a_pause_longer_than_the_read_timeout_resumes_and_replays_what_was_missed(
    fake: FakeDiscord,
) -> None:
    taken: list[str] = []
    outage = [True]

    async def deliver(msg: InboundMessage) -> None:
        if outage[0]:
            raise StorageError("inbox append failed: ConnectionError")
        taken.append(msg.text)

    adapter = DiscordAdapter(
        token=fake.token,
        api_base=fake.api_base,
        guild_ready_timeout=0.05,
        deliver=deliver,
        max_waiting=2,
        heartbeat_timeout=0.5,
    )
    await adapter.start()
    try:
        for n in range(2):
            await fake.user_message(f"before {n}", dm=True)
        await wait_until(lambda: _waiting() == 2)
        resumes = fake.resumes
        for n in range(3):
            await fake.user_message(f"paused {n}", dm=True)
        # Paused past the read timeout: discord.py closes the session's socket and reconnects,
        # and the new connection waits at the gate (no RESUME is sent while paused).
        await wait_until(lambda: fake.connected_shards() == [], timeout=5.0)
        outage[0] = False
        await wait_until(lambda: len(taken) == 5, timeout=10.0)
        assert sorted(taken) == ["before 0", "before 1", "paused 0", "paused 1", "paused 2"]
        assert fake.resumes > resumes and fake.identifies == 1  # resumed, never re-identified
    finally:
        await adapter.stop()
