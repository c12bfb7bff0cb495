"""`switchboard serve` and the outbound-file directory: a `files` symlink planted in the data
directory before start-up stops the service with one line, before any turn could read through it;
a worker creates the directory, mode 0700; an ingress, which runs no turns, never looks."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest

SWITCHBOARD = str(Path(sys.executable).parent / "switchboard")

pytestmark = pytest.mark.timeout(90)


def _env(data: Path, redis_url: str, prefix: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(data),
        "REDIS_URL": redis_url,
        "SWITCHBOARD_REDIS_CLUSTER": os.environ.get("SWITCHBOARD_REDIS_CLUSTER", "false"),
        "SWITCHBOARD_REDIS_PREFIX": prefix,
        "SWITCHBOARD_DATA_DIR": str(data),
        "SWITCHBOARD_HTTP_PORT": "0",
    }


async def _serve(data: Path, redis_url: str, prefix: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        SWITCHBOARD,
        "serve",
        cwd=data,
        env=_env(data, redis_url, prefix),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_a_planted_files_symlink_stops_serve_with_one_line(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "files").symlink_to("/")
    code, err = await _serve(data, redis_url, prefix)
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last == (
        f"switchboard: SWITCHBOARD_DATA_DIR: the outbound-file directory {data / 'files'} is a "
        "symbolic link; remove it and restart (Switchboard creates it, mode 0700)"
    )
    assert (data / "files").is_symlink()  # left for the operator to look at


async def test_a_worker_creates_the_files_dir_private(make_manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await make_manager(role="worker")
    info = os.lstat(tmp_path / "files")
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700


async def test_an_ingress_never_touches_the_files_dir(make_manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "files").symlink_to("/")  # would stop a worker; an ingress runs no turns
    await make_manager(role="ingress")
    assert (tmp_path / "files").is_symlink()
