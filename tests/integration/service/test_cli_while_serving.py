"""The admin CLI works beside a running `switchboard serve` on the embedded store, as the README's
linking steps need: real processes, the real embedded Valkey, no REDIS_URL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from storage import EmbeddedValkey
from tests.support import free_port

ROOT = Path(__file__).resolve().parents[3]


def _env(data_dir: Path, port: int) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TELEGRAM_", "SLACK_", "DISCORD_", "SWITCHBOARD_", "REDIS_"))
    }
    env.update(
        PYTHONPATH=str(ROOT),
        SWITCHBOARD_DATA_DIR=str(data_dir),
        SWITCHBOARD_HTTP_PORT=str(port),
        SWITCHBOARD_MODEL="demo",
    )
    return env


def _cli(data_dir: Path, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        env=_env(data_dir, port),
        cwd=data_dir,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _wait_ready(port: int, serve: subprocess.Popen[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert serve.poll() is None, "serve exited early"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("serve did not become ready")


def test_accounts_commands_reach_the_store_of_a_running_serve(tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve"],
        env=_env(tmp_path, port),
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_ready(port, serve)
        assert EmbeddedValkey.running_url(tmp_path) is not None

        created = _cli(tmp_path, port, "accounts", "create", "acme")
        assert created.returncode == 0, created.stderr
        assert created.stdout.strip()  # the API key, alone on stdout
        listed = _cli(tmp_path, port, "accounts", "list")
        assert listed.returncode == 0 and "acme" in listed.stdout
        assert serve.poll() is None
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
        log.close()
    assert serve.returncode == 0, (tmp_path / "serve.log").read_text()
    assert "no chat platform is configured" in (tmp_path / "serve.log").read_text()
    assert EmbeddedValkey.running_url(tmp_path) is None

    # With the service gone the command starts the embedded store itself: same data.
    again = _cli(tmp_path, port, "accounts", "list")
    assert again.returncode == 0 and "acme" in again.stdout
