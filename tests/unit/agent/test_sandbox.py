"""The outbound-file directory: created 0700 under the data directory, refused at start-up when
it is a symlink, someone else's or writable by others; paths opened inside it never follow a
symlink, never leave it, never hang on a FIFO."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agent.sandbox import FileRefused, open_inside, prepare_files_dir, read_inside
from switchboard.errors import ConfigError


def test_files_dir_is_created_private_under_the_data_dir(tmp_path: Path) -> None:
    root = prepare_files_dir(tmp_path / "data")
    assert root == (tmp_path / "data" / "files").resolve()
    info = os.lstat(root)
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == os.geteuid()
    assert prepare_files_dir(tmp_path / "data") == root  # an existing good one is kept


def test_a_pre_planted_symlink_as_the_files_dir_stops_start_up(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "files").symlink_to("/")
    with pytest.raises(ConfigError, match=r"files is a symbolic link; remove it"):
        prepare_files_dir(tmp_path / "data")


def test_a_files_dir_writable_by_others_stops_start_up(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "files").chmod(0o777)
    with pytest.raises(ConfigError, match="writable by other users"):
        prepare_files_dir(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory away needs root")
def test_a_files_dir_owned_by_another_user_stops_start_up(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir(mode=0o700)
    os.chown(tmp_path / "files", 4242, -1)
    with pytest.raises(ConfigError, match="owned by uid 4242"):
        prepare_files_dir(tmp_path)


def test_paths_resolve_only_to_real_files_inside(tmp_path: Path) -> None:
    root = prepare_files_dir(tmp_path)
    (root / "out").mkdir()
    (root / "out" / "r.txt").write_text("report")
    (tmp_path / "secret").write_text("token")
    (root / "leak").symlink_to(tmp_path / "secret")
    (root / "hop").symlink_to(root / "out")  # even a link that stays inside is refused
    os.mkfifo(root / "pipe")
    assert read_inside(root, "out/r.txt", 100) == b"report"
    assert read_inside(root, "./out//r.txt", 100) == b"report"
    refusals = {
        "leak": "symbolic link",
        "hop/r.txt": "symbolic link",
        "../secret": "leaves the files directory",
        "out/../out/r.txt": "leaves the files directory",
        str(root / "out" / "r.txt"): "is absolute",
        "": "give the path",
        "out": "not a regular file",
        "pipe": "not a regular file",
        "missing.txt": "does not exist",
    }
    for path, reason in refusals.items():
        with pytest.raises(FileRefused, match=reason):
            fd, _ = open_inside(root, path)
            os.close(fd)
    with pytest.raises(FileRefused, match="too large"):
        read_inside(root, "out/r.txt", 3)


def test_a_files_dir_replaced_by_a_symlink_after_start_up_is_not_read(tmp_path: Path) -> None:
    root = prepare_files_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / "r.txt").write_text("x")
    root.rmdir()
    root.symlink_to(elsewhere)
    with pytest.raises(FileRefused, match="not available"):
        read_inside(root, "r.txt", 100)
