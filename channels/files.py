"""Downloading a platform file with a size cap: the one HTTP loop the adapters' `fetch` share.

Why one helper: every platform hands us a URL (Telegram's file URL holds the bot token, Slack's
needs the bot token in a header, Discord's CDN URL is signed), and each must be read the same way:
refused before any byte moves when the reported size is over the cap, streamed and cut off when
it is not known, and failed with an error that names neither the URL nor the token.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from switchboard.errors import FileTooLarge, PlatformError

__all__ = ["DOWNLOAD_TIMEOUT_S", "check_size", "download"]

DOWNLOAD_TIMEOUT_S = 60.0  # a 10 MB file on a slow link; past this the turn goes on without it
_CHUNK = 64 * 1024


def check_size(size: int, max_bytes: int, *, platform: str) -> None:
    """Refuse a file over the cap before any byte moves: a download by the size the platform
    reported, an upload by its length."""
    if size and size > max_bytes:
        raise FileTooLarge(
            f"{platform}: file of {size} bytes is over the {max_bytes}-byte limit",
            platform=platform,
            size=size,
            limit=max_bytes,
        )


async def download(
    url: str,
    max_bytes: int,
    *,
    platform: str,
    headers: Mapping[str, str] | None = None,
    session: aiohttp.ClientSession | None = None,
    allow_redirects: bool = True,
) -> bytes:
    """GET `url`, at most `max_bytes` of body; `FileTooLarge` past it, `PlatformError` for any
    other failure (status or network), never with the URL in its text."""
    own = session is None
    client = session or aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_S)
    )
    try:
        async with client.get(
            url, headers=dict(headers or {}), allow_redirects=allow_redirects
        ) as response:
            if response.status != 200:
                raise PlatformError(
                    f"{platform}: file download failed (HTTP {response.status})",
                    platform=platform,
                    code=response.status,
                )
            declared = response.content_length or 0
            check_size(declared, max_bytes, platform=platform)
            body = bytearray()
            async for chunk in response.content.iter_chunked(_CHUNK):
                body += chunk
                if len(body) > max_bytes:
                    raise FileTooLarge(
                        f"{platform}: file is over the {max_bytes}-byte limit",
                        platform=platform,
                        limit=max_bytes,
                    )
            return bytes(body)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise PlatformError(
            f"{platform}: file download failed ({type(exc).__name__})", platform=platform
        ) from None
    finally:
        if own:
            await client.close()
