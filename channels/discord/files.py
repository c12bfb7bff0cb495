"""Discord files: attachments read from the CDN, files sent as a message with a `discord.File`.

Why apart from the adapter: attachment URLs are signed (`ex`/`is`/`hm` query parameters) and are
fetched as given, never logged. A bot may upload 10 MiB per message on an unboosted server;
bigger files get the manager's notice instead.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TypedDict

import discord

from channels.adapter import SentRef
from channels.discord.errors import translated
from channels.discord.pacing import DiscordPacing
from channels.files import check_size, download
from channels.message import Attachment, Platform, ReplyTarget
from switchboard.errors import PlatformError

__all__ = ["MAX_UPLOAD_BYTES", "DiscordFiles"]

MAX_UPLOAD_BYTES = 10 * 1024 * 1024
_PLATFORM = str(Platform.DISCORD)


class _SendExtra(TypedDict, total=False):
    """`send`'s optional arguments; discord.py's overloads take no None for `reference`."""

    reference: discord.MessageReference


class DiscordFiles:
    """File transfer through one client; `reference` is the adapter's reply reference rule,
    `pacing` its send budget (a file goes out as a message)."""

    def __init__(
        self,
        *,
        client: discord.Client,
        reference: Callable[[ReplyTarget], discord.MessageReference | None],
        pacing: DiscordPacing,
    ) -> None:
        self._client = client
        self._reference = reference
        self._pacing = pacing

    async def fetch(self, attachment: Attachment, max_bytes: int) -> bytes:
        if not attachment.url.startswith(("https://", "http://")):
            raise PlatformError("discord: attachment has no URL", platform=_PLATFORM)
        check_size(attachment.size, max_bytes, platform=_PLATFORM)
        return await download(attachment.url, max_bytes, platform=_PLATFORM)

    async def send_file(self, target: ReplyTarget, name: str, data: bytes, mime: str) -> SentRef:
        check_size(len(data), MAX_UPLOAD_BYTES, platform=_PLATFORM)
        channel = self._client.get_partial_messageable(int(target.chat_id))
        extra: _SendExtra = {}
        reference = self._reference(target)
        if reference is not None:
            extra["reference"] = reference
        await self._pacing.send(target.chat_id)
        async with translated("send file"):
            sent = await channel.send(
                file=discord.File(io.BytesIO(data), filename=name or "file"),
                allowed_mentions=discord.AllowedMentions.none(),
                **extra,
            )
        return SentRef(chat_id=target.chat_id, message_ids=(str(sent.id),))
