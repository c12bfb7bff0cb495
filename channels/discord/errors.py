"""Discord exceptions become `switchboard.errors` here, and every REST call gets a time bound.

discord.py raises `HTTPException` (with Discord's JSON error `code`, e.g. 50013 Missing
Permissions, 160004 thread already created), `Forbidden`/`NotFound` subclasses, `RateLimited` only
when a 429 would sleep past its limit (shorter ones it waits out itself, which we leave intact),
and aiohttp/OS errors for the network. The messages we raise carry Discord's short error text,
never request headers, so the token cannot leak through them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import discord

from switchboard.errors import PlatformAuthError, PlatformError, PlatformRateLimited

__all__ = ["API_TIMEOUT_S", "THREAD_ALREADY_CREATED", "translated"]

API_TIMEOUT_S = 30.0  # one REST call, discord.py's own 429 waits included
THREAD_ALREADY_CREATED = 160004  # "A thread has already been created for this message"
_PLATFORM = "discord"


@contextlib.asynccontextmanager
async def translated(action: str) -> AsyncIterator[None]:
    """Run one Discord call, bounded in time, raising only `PlatformError`s."""
    try:
        async with asyncio.timeout(API_TIMEOUT_S):
            yield
    except discord.RateLimited as exc:
        raise PlatformRateLimited(
            f"discord {action}: rate limited", platform=_PLATFORM, retry_after=exc.retry_after
        ) from exc
    except discord.LoginFailure as exc:
        raise PlatformAuthError(f"discord {action}: token rejected", platform=_PLATFORM) from exc
    except discord.HTTPException as exc:
        if exc.status == 401:
            raise PlatformAuthError(
                f"discord {action}: unauthorised", platform=_PLATFORM, code=401
            ) from exc
        raise PlatformError(
            f"discord {action} failed: {exc.status} {exc.text[:200]}",
            platform=_PLATFORM,
            code=exc.code or exc.status,
        ) from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise PlatformError(
            f"discord {action}: network error", platform=_PLATFORM, code="network"
        ) from exc
    except TimeoutError as exc:
        raise PlatformError(
            f"discord {action}: timed out", platform=_PLATFORM, code="timeout"
        ) from exc
