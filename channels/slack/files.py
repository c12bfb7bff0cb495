"""Slack files: `url_private` downloads with the bot token, uploads with `files_upload_v2`.
A Slack Connect file arrives without a URL and is looked up with `files.info` first.

Why apart from the adapter: the bot token travels in the download's Authorization header, and
only here; errors name the step and HTTP status, never the URL. Uploads go through slack-sdk's
`files_upload_v2` (files.getUploadURLExternal, the upload, files.completeUploadExternal), which
shares the file into the conversation's thread. Slack accepts files up to 1 GB.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from channels.adapter import SentRef
from channels.files import check_size, download
from channels.message import Attachment, Platform, ReplyTarget
from channels.slack.pacing import SlackPacing
from switchboard.errors import PlatformError

__all__ = ["MAX_UPLOAD_BYTES", "SlackFiles"]

MAX_UPLOAD_BYTES = 1024 * 1024 * 1024
_PLATFORM = str(Platform.SLACK)

ApiCall = Callable[[Awaitable[AsyncSlackResponse]], Awaitable[AsyncSlackResponse]]


class SlackFiles:
    """File transfer for one bot token; `call` is the adapter's error-translating Web API call,
    `pacing` its send budget (a shared file is a message in the channel)."""

    def __init__(self, *, client: AsyncWebClient, call: ApiCall, pacing: SlackPacing) -> None:
        self._client = client
        self._call = call
        self._pacing = pacing

    async def fetch(self, attachment: Attachment, max_bytes: int) -> bytes:
        attachment = await self.describe(attachment)
        if not attachment.url.startswith(("https://", "http://")):
            raise PlatformError("slack: attachment has no download URL", platform=_PLATFORM)
        check_size(attachment.size, max_bytes, platform=_PLATFORM)
        headers = {"Authorization": f"Bearer {self._client.token}"}
        # No redirects: Slack answers a bad token with a redirect to a login page (HTML), which
        # must fail here rather than reach the model as the file.
        return await download(
            attachment.url, max_bytes, platform=_PLATFORM, headers=headers, allow_redirects=False
        )

    async def describe(self, attachment: Attachment) -> Attachment:
        """A file the event named only by id (`file_access: check_file_info`), as `files.info`
        describes it: its name, download URL, size and type; any other file as it is."""
        if attachment.url or not attachment.file_id:
            return attachment
        resp = await self._call(self._client.files_info(file=attachment.file_id))
        file = resp.get("file") or {}
        return replace(
            attachment,
            name=attachment.name or str(file.get("name") or ""),
            url=str(file.get("url_private") or ""),
            size=int(file.get("size") or 0),
            mime=str(file.get("mimetype") or ""),
        )

    async def send_file(self, target: ReplyTarget, name: str, data: bytes, mime: str) -> SentRef:
        check_size(len(data), MAX_UPLOAD_BYTES, platform=_PLATFORM)
        await self._pacing.post(target.chat_id)
        await self._call(
            self._client.files_upload_v2(
                channel=target.chat_id,
                thread_ts=target.thread_anchor,
                filename=name or "file",
                title=name or "file",
                content=data,
            )
        )
        return SentRef(chat_id=target.chat_id, message_ids=())
