"""Load a `python:` agent in a short-lived interpreter before this process imports it.

A module or factory can end the interpreter that loads it (`os.abort()`, `os._exit()`, a crash
in native code); no `except` survives that. An agent the operator did not write (a rule sent
over HTTP) is therefore imported, and its factory called, in a child `python` first, with the
same working directory and environment `load_graph` would see. Only a child that finds a
compiled graph with a `messages` channel lets it through; anything else is an `AgentRefused`
(422) with a short reason: never the child's output, which is the module's and may hold
anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys

from agent.backends.policy import AgentRefused

__all__ = ["PROBE_TIMEOUT_S", "probe_graph"]

PROBE_TIMEOUT_S = 60.0  # importing a graph module with its SDKs takes seconds, not minutes
_MARK = "switchboard-probe:"

# Runs in the child with `sys.argv[1]` = `pkg.module:attr`; prints one marked JSON line last.
_CHILD = r"""
import asyncio, importlib, inspect, json, sys
MARK = "switchboard-probe:"
def say(ok, why=""):
    sys.stdout.flush()
    print(MARK + json.dumps({"ok": ok, "why": why}), flush=True)
def is_graph(v):
    return callable(getattr(v, "ainvoke", None)) and callable(getattr(v, "aget_state", None))
async def made(f):
    v = f()
    return (await v) if inspect.isawaitable(v) else v
target = sys.argv[1]
name, _, attr = target.partition(":")
try:
    module = importlib.import_module(name)
except ModuleNotFoundError as exc:
    say(False, f"no module named {exc.name!r}" if name.startswith(exc.name or "\0")
        else f"importing it failed: a module it needs is missing ({exc.name})")
    raise SystemExit(0)
except BaseException as exc:
    say(False, f"importing it failed ({type(exc).__name__})")
    raise SystemExit(0)
if not hasattr(module, attr):
    say(False, f"{name} has no {attr!r}")
    raise SystemExit(0)
found = getattr(module, attr)
if not is_graph(found):
    if not callable(found):
        say(False, "expected a compiled graph or a zero-argument factory")
        raise SystemExit(0)
    try:
        found = asyncio.run(made(found))
    except BaseException as exc:
        say(False, f"its factory failed ({type(exc).__name__})")
        raise SystemExit(0)
    if not is_graph(found):
        say(False, f"the factory returned {type(found).__name__}, not a compiled graph")
        raise SystemExit(0)
if "messages" not in (getattr(found, "channels", None) or {}):
    say(False, "the graph's state has no 'messages' key")
    raise SystemExit(0)
say(True)
"""


async def probe_graph(target: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise `AgentRefused(forbidden=False)` unless `pkg.module:attr` loads, in a child
    interpreter, as a graph `load_graph` would take."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _CHILD,
        target,
        cwd=os.getcwd(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,  # what it starts is ours to stop with it
    )
    try:
        out, _ = await asyncio.wait_for(child.communicate(), timeout_s)
    except TimeoutError:
        await _stop(child)
        raise AgentRefused(
            f"python:{target}: it did not load within {timeout_s:.0f} s", forbidden=False
        ) from None
    except asyncio.CancelledError:
        await _stop(child)
        raise
    verdict = _verdict(out.decode("utf-8", "replace"))
    if verdict is not None and verdict.get("ok") is True and child.returncode == 0:
        return
    if child.returncode is not None and child.returncode < 0:
        why = f"loading it ended the interpreter ({_signal_name(-child.returncode)})"
    elif verdict is not None and verdict.get("ok") is False:
        why = str(verdict.get("why") or "it does not load")
    else:
        why = f"loading it ended the interpreter (exit status {child.returncode})"
    raise AgentRefused(f"python:{target}: {why}", forbidden=False)


async def _stop(child: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    await asyncio.shield(child.wait())


def _verdict(out: str) -> dict[str, object] | None:
    """The child's own last marked line; anything the module printed is ignored."""
    for line in reversed(out.splitlines()):
        if line.startswith(_MARK):
            with contextlib.suppress(ValueError):
                found = json.loads(line.removeprefix(_MARK))
                return found if isinstance(found, dict) else None
    return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
