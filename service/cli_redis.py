"""The store a one-shot CLI command opens: `REDIS_URL`, else the embedded store a running
`serve`/`console` publishes in the data dir, else one the command starts itself.

Its own module so every `switchboard …` command reaches Redis the same way without importing
another command's module (which had made `cli_admin`, `cli_feedback` and `cli_usage` a circle).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from service.settings import Settings

__all__ = ["cli_redis", "store_url"]


def store_url(settings: Settings) -> str | None:
    """`REDIS_URL`, else the URL of the embedded store a running `serve`/`console` publishes;
    None means no one runs it, and the command starts the embedded server itself."""
    from storage import EmbeddedValkey

    return settings.redis_url or EmbeddedValkey.running_url(settings.data_dir)


@contextlib.asynccontextmanager
async def cli_redis(settings: Settings) -> AsyncIterator[Any]:
    """A client on the store the settings name, closed (and an embedded server it started,
    stopped) on exit."""
    from storage import open_redis

    async with open_redis(
        store_url(settings), settings.data_dir, cluster=settings.redis_cluster
    ) as client:
        yield client
