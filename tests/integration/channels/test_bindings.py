"""Bindings end to end: the production wiring (`build_core`) with a bindings file, real Redis,
the real Slack and Discord SDKs against the fake platforms, and the fake OpenAI server, which
records the model each request names."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from channels.discord import DiscordAdapter
from channels.message import InboundMessage, Platform
from channels.slack import SlackAdapter
from service.app import Core, build_adapters, build_core, place_policies
from service.http import build_http_app
from service.settings import Settings
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.recording_adapter import RecordingAdapter
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import TOKEN as TELEGRAM_TOKEN
from tests.fakes.telegram_server import FakeTelegram
from tests.support import wait_until

_ts = itertools.count(1)
_ids = itertools.count(1)

CoreFactory = Callable[..., Awaitable[Core]]
READYZ_ADMIN_KEY = "bindings-readyz-admin-key-0123456789"


@pytest.fixture
async def make_core(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> AsyncIterator[CoreFactory]:
    """The production core with `rules` written as its bindings file."""
    stack = AsyncExitStack()

    async def factory(rules: str, **overrides: Any) -> Core:
        path = tmp_path / "bindings.yaml"
        path.write_text(rules, encoding="utf-8")
        fields = {
            "access": "open",
            "redis_prefix": prefix,
            "data_dir": tmp_path,
            "streaming": "off",
            "bindings": path,
            **overrides,
        }
        settings = Settings(_env_file=None, **fields)  # type: ignore[arg-type]
        return await stack.enter_async_context(build_core(settings, redis))

    try:
        yield factory
    finally:
        await stack.aclose()


def _slack_mention(text: str, *, channel: str, ts: str) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": "U1",
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": channel,
        "team": "T0FAKE",
    }


def _dm(text: str, *, user: str = "U1", chat: str = "D1") -> InboundMessage:
    return InboundMessage(
        platform=Platform.SLACK,
        workspace_id="T1",
        chat_id=chat,
        sender_id=user,
        sender_name="alice",
        text=text,
        provider_message_id=f"m{next(_ids)}",
        is_dm=True,
    )


async def test_two_slack_channels_are_answered_by_the_models_their_bindings_name(
    make_core: CoreFactory, openai_server: FakeOpenAI
) -> None:
    core = await make_core(
        "- platform: slack\n  channel: C1\n  model: openai:model-one\n"
        "- platform: slack\n  channel: C2\n  model: openai:model-two\n",
        openai_base_url=openai_server.base_url,
        openai_api_key=API_KEY,
    )
    fake = FakeSlack()
    await fake.start()
    fake.add_user("U1", "alice")
    seen: list[InboundMessage] = []

    async def relay(msg: InboundMessage) -> None:
        await core.manager.deliver(msg)
        seen.append(msg)

    adapter = SlackAdapter(
        bot_token=fake.bot_token, deliver=relay, app_token=fake.app_token, api_base=fake.api_base
    )
    core.manager.register(adapter)
    await adapter.start()
    try:
        await wait_until(lambda: fake.socket_connected)
        for channel in ("C1", "C2", "C1"):
            ts = f"1690000000.{next(_ts):06d}"
            await fake.wait_ack(
                await fake.push_event(_slack_mention(f"hi from {channel}", channel=channel, ts=ts))
            )
        await wait_until(lambda: len(seen) >= 3)
        await core.manager.idle()
        replies = {
            (c.params["channel"], c.params["text"]) for c in fake.calls_to("chat.postMessage")
        }
    finally:
        await adapter.stop()
        await fake.stop()
    assert replies == {("C1", "You said: hi from C1"), ("C2", "You said: hi from C2")}
    models = [
        (r.body["model"], r.messages[-1]["content"])
        for r in openai_server.requests
        if r.body.get("model")
    ]
    assert sorted(models) == [
        ("model-one", "hi from C1"),
        ("model-one", "hi from C1"),
        ("model-two", "hi from C2"),
    ]


async def test_a_discord_role_is_answered_by_the_graph_its_binding_names(
    make_core: CoreFactory,
) -> None:
    fake = await FakeDiscord().start()
    core = await make_core(
        f"- platform: discord\n  discord_role: '{fake.admin_role}'\n"
        "  agent: python:examples.echo_graph:graph\n"
    )
    seen: list[InboundMessage] = []

    async def relay(msg: InboundMessage) -> None:
        await core.manager.deliver(msg)
        seen.append(msg)

    adapter = DiscordAdapter(
        token=fake.token, deliver=relay, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    core.manager.register(adapter)
    await adapter.start()
    try:
        bot = fake.bot["id"]
        from_role = await fake.user_message(f"<@{bot}> status report", author=fake.carol)
        plain = await fake.user_message(f"<@{bot}> status report", author=fake.alice)
        await wait_until(lambda: len(seen) >= 2)
        await core.manager.idle()
        with_role = [m["content"] for m in fake.bot_messages(from_role["id"])]
        without = [m["content"] for m in fake.bot_messages(plain["id"])]
    finally:
        await adapter.stop()
        await fake.close()
    assert with_role == ["Echo graph heard: status report"]
    assert without == ["You said: status report"]


async def test_status_shows_the_agent_and_model_bound_to_the_conversation(
    make_core: CoreFactory,
) -> None:
    core = await make_core(
        "- platform: slack\n  user: U2\n  model: openai:gpt-4o-mini\n"
        "- platform: slack\n  user: U3\n  agent: https://bob:pw@agents.example\n"
        "  assistant: support\n"
    )
    adapter = RecordingAdapter(deliver=core.manager.deliver)
    core.manager.register(adapter)
    for user in ("U1", "U2", "U3"):
        await core.manager.deliver(_dm("/status", user=user, chat=f"D{user}"))
        await core.manager.idle()
    plain, bound_model, bound_agent = adapter.texts()[-3:]
    assert "Agent: builtin\nModel: demo" in plain and "Binding" not in plain
    assert "Agent: builtin\nModel: openai:gpt-4o-mini\nBinding: rule 1" in bound_model
    assert "Agent: remote https://agents.example (support)" in bound_agent
    assert "Model: chosen by the agent" in bound_agent and "pw" not in bound_agent


async def test_a_broken_agent_of_one_binding_fails_only_its_conversations_and_is_named(
    make_core: CoreFactory,
) -> None:
    core = await make_core(
        "- platform: slack\n  user: U2\n  agent: python:no_such_module:graph\n",
        admin_key=READYZ_ADMIN_KEY,
    )
    assert list(core.status()["agents_unavailable"]) == ["python:no_such_module:graph"]
    adapter = RecordingAdapter(deliver=core.manager.deliver)
    core.manager.register(adapter)
    await core.manager.deliver(_dm("hello broken", user="U2", chat="D2"))
    await core.manager.idle()
    await core.manager.deliver(_dm("hello fine", user="U1", chat="D1"))
    await core.manager.idle()
    broken, fine = adapter.texts()
    assert broken.startswith("Sorry") and "(ref " in broken and "Traceback" not in broken
    assert fine == "You said: hello fine"
    assert "no_such_module" in str(core.status()["agents_unavailable"])

    async def ready() -> bool:
        return True

    app = build_http_app(
        settings=core.settings,
        accounts=core.accounts,
        links=core.links,
        ready=ready,
        status=core.status,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://switchboard.test") as http:
        readyz = await http.get("/readyz")
        as_admin = await http.get(
            "/readyz", headers={"Authorization": f"Bearer {READYZ_ADMIN_KEY}"}
        )
        wrong_key = await http.get("/readyz", headers={"Authorization": "Bearer not-the-key"})
    assert readyz.status_code == 200  # the other agents answer: the process is ready
    # anyone may ask whether it is ready; which agent is broken, and why, is the operator's
    assert readyz.json()["agents_unavailable"] == 1 and "no_such_module" not in readyz.text
    assert wrong_key.json()["agents_unavailable"] == 1
    assert list(as_admin.json()["agents_unavailable"]) == ["python:no_such_module:graph"]


async def test_without_bindings_the_manager_runs_the_default_agent_directly(
    redis: aioredis.Redis, prefix: str, tmp_path: Path
) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, access="open", redis_prefix=prefix, data_dir=tmp_path
    )
    async with build_core(settings, redis) as core:
        assert core.agents is None and core.bindings is None
        assert "agents_unavailable" not in core.status()


async def test_a_telegram_group_bound_without_mentions_answers_each_person_in_their_own_session(
    make_core: CoreFactory,
) -> None:
    fake = FakeTelegram()
    await fake.start()
    core = await make_core(
        "- platform: telegram\n  workspace: '-1001'\n  require_mention: false\n"
        "  sessions: per_user\n",
        telegram_bot_token=TELEGRAM_TOKEN,
        telegram_api_base=fake.base_url,
    )
    [adapter] = build_adapters(core.settings, core.manager, policy=place_policies(core))
    await adapter.start()
    ann, bob = FakeTelegram.user(7, "Ann"), FakeTelegram.user(8, "Bob")
    open_group, other_group = fake.group(-1001), fake.group(-1002)
    try:
        fake.say(open_group, ann, "remember pineapples")
        await wait_until(lambda: len(fake.bot_texts(-1001)) >= 1)
        fake.say(open_group, bob, "remember mangoes")
        await wait_until(lambda: len(fake.bot_texts(-1001)) >= 2)
        fake.say(open_group, ann, "recall")
        await wait_until(lambda: len(fake.bot_texts(-1001)) >= 3)
        fake.say(open_group, bob, "recall")
        await wait_until(lambda: len(fake.bot_texts(-1001)) >= 4)
        fake.say(other_group, ann, "hello there")  # no binding: a mention is still needed
        marker = fake.dm(ann)
        fake.say(marker, ann, "ping")
        await wait_until(lambda: len(fake.bot_texts(marker["id"])) >= 1)
        await core.manager.idle()
        texts, others = fake.bot_texts(-1001), fake.bot_texts(-1002)
    finally:
        await adapter.stop()
        await fake.stop()
    assert texts == [
        "You said: remember pineapples",
        "You said: remember mangoes",
        "You first said: remember pineapples",
        "You first said: remember mangoes",
    ]
    assert others == []


async def test_allow_bots_mentions_answers_another_bot_only_when_it_mentions_ours(
    make_core: CoreFactory,
) -> None:
    fake = await FakeDiscord().start()
    core = await make_core(
        "- platform: discord\n  allow_bots: mentions\n",
        discord_bot_token=fake.token,
        discord_api_base=fake.api_base,
    )
    seen: list[InboundMessage] = []

    async def relay(msg: InboundMessage) -> None:
        await core.manager.deliver(msg)
        seen.append(msg)

    adapter = DiscordAdapter(
        token=fake.token,
        deliver=relay,
        api_base=fake.api_base,
        guild_ready_timeout=0.05,
        policy=place_policies(core),
    )
    core.manager.register(adapter)
    await adapter.start()
    try:
        bot = fake.bot["id"]
        unmentioned = await fake.user_message("deploy finished", author=fake.other_bot)
        mentioned = await fake.user_message(f"<@{bot}> summarise the deploy", author=fake.other_bot)
        marker = await fake.user_message("hi", dm=True)
        await wait_until(lambda: len(seen) >= 2)
        await core.manager.idle()
        ids = [m.provider_message_id for m in seen]
        answered = [m["content"] for m in fake.bot_messages(mentioned["id"])]
    finally:
        await adapter.stop()
        await fake.close()
    assert sorted(ids) == sorted([mentioned["id"], marker["id"]])
    assert unmentioned["id"] not in fake.threads
    assert answered == ["You said: summarise the deploy"]


async def test_a_bindings_busy_mode_replaces_the_default_for_its_conversations_only(
    make_core: CoreFactory,
) -> None:
    core = await make_core(
        "- platform: slack\n  user: U2\n  busy: reject\n", rate_limit_per_minute=1000
    )
    adapter = RecordingAdapter(deliver=core.manager.deliver)
    core.manager.register(adapter)
    await core.manager.deliver(_dm("slow 1", user="U2", chat="DA"))  # the demo model waits 1 s
    await core.manager.deliver(_dm("slow 1", user="U1", chat="DB"))
    await wait_until(lambda: adapter.typing_count == 2)
    await core.manager.deliver(_dm("echo late in A", user="U2", chat="DA"))
    await core.manager.deliver(_dm("echo late in B", user="U1", chat="DB"))
    await core.manager.idle()
    await core.manager.deliver(_dm("/status", user="U2", chat="DA"))
    await core.manager.idle()
    by_chat = {c: [s.text for s in adapter.sent if s.target.chat_id == c] for c in ("DA", "DB")}
    busy = "I'm still working on the previous message here; please resend in a moment."
    assert sorted(by_chat["DA"][:2]) == sorted(["Done after 1 s.", busy])
    assert "Busy mode: reject (this place's binding)" in by_chat["DA"][2]
    assert by_chat["DB"] == ["Done after 1 s.", "late in B"]


async def test_a_bindings_streaming_off_sends_its_conversations_whole_while_others_stream(
    make_core: CoreFactory,
) -> None:
    fake = FakeTelegram()
    await fake.start()
    core = await make_core(
        "- platform: telegram\n  user: '7'\n  streaming: off\n",
        streaming="on",
        telegram_bot_token=TELEGRAM_TOKEN,
        telegram_api_base=fake.base_url,
    )
    [adapter] = build_adapters(core.settings, core.manager, policy=place_policies(core))
    await adapter.start()
    ann, bob = FakeTelegram.user(7, "Ann"), FakeTelegram.user(8, "Bob")
    words = " ".join(f"w{i}" for i in range(1, 26))  # `drip 25`: about 2.5 s of writing
    try:
        fake.say(fake.dm(ann), ann, "drip 25")
        fake.say(fake.dm(bob), bob, "drip 25")
        await wait_until(lambda: fake.bot_texts(7) and fake.bot_texts(8), timeout=30)
        await core.manager.idle()
    finally:
        await adapter.stop()
        await fake.stop()
    drafted = {str(c["chat_id"]) for c in fake.calls_to("sendMessageDraft")}
    assert drafted == {"8"}
    assert fake.bot_texts(7) == [words] and fake.bot_texts(8) == [words]


async def test_a_slack_channel_bound_without_mentions_answers_a_plain_message_in_a_thread(
    make_core: CoreFactory,
) -> None:
    fake = FakeSlack()
    await fake.start()
    fake.add_user("U1", "alice")
    core = await make_core(
        "- platform: slack\n  channel: C7\n  require_mention: false\n",
        slack_bot_token=fake.bot_token,
        slack_app_token=fake.app_token,
        slack_api_base=fake.api_base,
    )
    [adapter] = build_adapters(core.settings, core.manager, policy=place_policies(core))
    await adapter.start()
    try:
        await wait_until(lambda: fake.socket_connected)
        for channel in ("C1", "C7"):  # C1 has no binding: a mention is still needed there
            ts = f"1690000000.{next(_ts):06d}"
            event = _slack_mention(f"plain words in {channel}", channel=channel, ts=ts)
            event.update(type="message", text=f"plain words in {channel}", channel_type="channel")
            await fake.wait_ack(await fake.push_event(event))
        await wait_until(lambda: fake.calls_to("chat.postMessage"))
        await core.manager.idle()
        replies = [
            (c.params["channel"], c.params["text"]) for c in fake.calls_to("chat.postMessage")
        ]
        threaded = [c.params.get("thread_ts") for c in fake.calls_to("chat.postMessage")]
    finally:
        await adapter.stop()
        await fake.stop()
    assert replies == [("C7", "You said: plain words in C7")]
    assert threaded[0] is not None


async def test_a_discord_channel_binding_covers_the_threads_the_bot_opens_in_it(
    make_core: CoreFactory,
) -> None:
    fake = await FakeDiscord().start()
    core = await make_core(
        f"- platform: discord\n  channel: '{fake.channel_id}'\n"
        "  agent: python:examples.echo_graph:graph\n"
    )
    seen: list[InboundMessage] = []

    async def relay(msg: InboundMessage) -> None:
        await core.manager.deliver(msg)
        seen.append(msg)

    adapter = DiscordAdapter(
        token=fake.token, deliver=relay, api_base=fake.api_base, guild_ready_timeout=0.05
    )
    core.manager.register(adapter)
    await adapter.start()
    try:
        asked = await fake.user_message(f"<@{fake.bot['id']}> first question")
        await wait_until(lambda: len(seen) >= 1)
        await core.manager.idle()
        await fake.user_message("a follow-up", channel_id=asked["id"])  # in the bot's thread
        await wait_until(lambda: len(seen) >= 2)
        await core.manager.idle()
        replies = [m["content"] for m in fake.bot_messages(asked["id"])]
    finally:
        await adapter.stop()
        await fake.close()
    assert seen[1].chat_id == asked["id"] and seen[1].parent_id == fake.channel_id
    assert replies == ["Echo graph heard: first question", "Echo graph heard: a follow-up"]
