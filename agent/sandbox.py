"""The outbound-file directory: where tools leave files the agent may send (`send_file(path=…)`).

Why a directory of our own, checked: a well-known name in a world-writable place (`/tmp`) belongs
to whoever creates it first, and a symlink there turns "send a file the agent wrote" into "send
any file this user can read". So the directory is `<SWITCHBOARD_DATA_DIR>/files`:

- `prepare_files_dir(data_dir)` creates it (mode 0700) or checks the one there at start-up: it
  must be a real directory (not a symlink), owned by this process's user and writable by nobody
  else, or start-up stops with one `ConfigError` line. The data directory itself is the
  operator's (a mounted volume may be a symlink); only `files` is ours.
- `open_inside(root, path)` walks `path` one component at a time from a descriptor of `root`,
  each opened with `O_NOFOLLOW` relative to the previous one (`openat`), so a symlink anywhere
  is refused, never followed, even one swapped in after a check. Absolute paths, `..` and empty
  paths are refused before anything is opened; the target must be a regular file with one link
  (`st_nlink == 1`, read from the opened descriptor): a hard link is a second name for a file
  that may live anywhere on the same file system (the service's own `.env`), and no component
  walk can tell where its other name is.

A refusal (`FileRefused`) says what went wrong twice: its message, for the model, names the path
inside the directory; its `reason`, for the user, is a few plain words with no path at all.

Files are read twice by design: once when the tool is called (size and a sniffed head only) and
once when the turn's files are sent (`read_inside`), so the checkpoint keeps a reference, never
the bytes (`agent.attachments.file_reference`).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

import structlog

from switchboard.errors import ConfigError

__all__ = [
    "FILES_SUBDIR",
    "FileRefused",
    "open_inside",
    "prepare_files_dir",
    "read_head",
    "read_inside",
]

FILES_SUBDIR = "files"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted under a file's name must not hang the worker.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1024 * 1024
# What the user is told (`FileRefused.reason`).
_NO_DIR = "my files folder is not available"
_OUTSIDE = "it is not in my files folder"
_LINK = "it is a link to another file, which I don't send"
_TOO_LARGE = "it is larger than I can send"

_log = structlog.get_logger(__name__)


class FileRefused(ValueError):
    """A path the sandbox will not open. The message is fit to show the model; `reason` is
    why in plain words, fit to show the user (no path, no error text)."""

    def __init__(self, message: str, reason: str = "it could not be read safely") -> None:
        super().__init__(message)
        self.reason = reason


def prepare_files_dir(data_dir: Path) -> Path:
    """`<data_dir>/files`, created mode 0700 or checked; its absolute path."""
    root = data_dir.resolve() / FILES_SUBDIR
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(root, 0o700)
            _log.info("files_dir.created", path=str(root))
        except FileExistsError:
            pass
        info = os.lstat(root)
    except OSError as exc:
        raise ConfigError(
            f"SWITCHBOARD_DATA_DIR: cannot create the outbound-file directory {root} "
            f"({exc.strerror})"
        ) from None
    problem = _dir_problem(info)
    if problem:
        raise ConfigError(
            f"SWITCHBOARD_DATA_DIR: the outbound-file directory {root} {problem}; "
            "remove it and restart (Switchboard creates it, mode 0700)"
        )
    return root


def open_inside(root: Path, path: str) -> tuple[int, int]:
    """A read-only descriptor of the regular file `path` names under `root`, and its size.
    The caller closes the descriptor. Raises `FileRefused`."""
    parts = _parts(path)
    try:
        directory = os.open(root, _DIR_FLAGS)
    except OSError:
        raise FileRefused("the files directory is not available", _NO_DIR) from None
    try:
        problem = _dir_problem(os.fstat(directory))
        if problem:
            raise FileRefused("the files directory is not available", _NO_DIR)
        for part in parts[:-1]:
            inner = _open_at(part, _DIR_FLAGS, directory, path)
            os.close(directory)
            directory = inner
        fd = _open_at(parts[-1], _FILE_FLAGS, directory, path)
    finally:
        os.close(directory)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise FileRefused(f"{path} is not a regular file", "it is not a regular file")
    if info.st_nlink > 1:
        os.close(fd)
        raise FileRefused(
            f"{path} is a hard link (the same file under another name, perhaps outside the "
            "files directory): only files written inside the files directory can be sent",
            _LINK,
        )
    return fd, info.st_size


def read_head(root: Path, path: str, size: int) -> tuple[bytes, int]:
    """The first `size` bytes of the file (enough to sniff its type) and its full size."""
    fd, total = open_inside(root, path)
    with os.fdopen(fd, "rb") as file:
        return file.read(size), total


def read_inside(root: Path, path: str, max_bytes: int) -> bytes:
    """The whole file, refused when it is (or grew) over `max_bytes`."""
    fd, total = open_inside(root, path)
    with os.fdopen(fd, "rb") as file:
        if total > max_bytes:
            raise FileRefused(f"{path} is too large", _TOO_LARGE)
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileRefused(f"{path} is too large", _TOO_LARGE)
    return data


def _parts(path: str) -> list[str]:
    if not path or "\x00" in path:
        raise FileRefused("give the path of a file inside the files directory", _OUTSIDE)
    pure = PurePosixPath(path)
    if pure.is_absolute():
        raise FileRefused(
            f"{path} is absolute: give a path relative to the files directory", _OUTSIDE
        )
    parts = list(pure.parts)
    if not parts or ".." in parts:
        raise FileRefused(f"{path} leaves the files directory", _OUTSIDE)
    return parts


def _open_at(name: str, flags: int, directory: int, path: str) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except FileNotFoundError:
        raise FileRefused(f"{path} does not exist", "it no longer exists") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise FileRefused(
                f"{path} goes through a symbolic link or a non-directory: only real files "
                "inside the files directory can be sent",
                _LINK,
            ) from None
        raise FileRefused(
            f"{path} cannot be opened ({exc.strerror})", "it could not be opened"
        ) from None


def _dir_problem(info: os.stat_result) -> str | None:
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.geteuid():
        return f"is owned by uid {info.st_uid}, not this user (uid {os.geteuid()})"
    if info.st_mode & 0o022:
        return "is writable by other users"
    return None
