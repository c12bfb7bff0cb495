"""How an operator command ends on an error: one line on stderr, and an exit code a script can act
on: 2 when settings or the store failed (nothing was asked yet), 1 when the request was refused
(unknown account, expired token, malformed id, ...)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

from switchboard.errors import ConfigError, StorageError, SwitchboardError

__all__ = ["fail", "run_command"]


def fail(message: str) -> None:
    print(f"switchboard: {message}", file=sys.stderr)


def run_command(
    work: Coroutine[Any, Any, int],
    *,
    refused: tuple[type[Exception], ...] = (SwitchboardError,),
) -> int:
    """Run a command's coroutine to its exit code, turning the errors above into theirs."""
    try:
        return asyncio.run(work)
    except (ConfigError, StorageError) as exc:
        fail(str(exc))
        return 2
    except refused as exc:
        fail(str(exc))
        return 1
