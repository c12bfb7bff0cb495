"""Telegram files: `getFile` + download for inbound attachments, `sendPhoto`/`sendDocument` out.

Why a module of its own: the file URL is `<api base>/file/bot<token>/<file_path>`, so it holds
the bot token; it is built here, used once, and never logged or put in an error (errors say the
step and the HTTP status only). Limits are the Bot API's: a bot downloads files up to 20 MB and
uploads photos up to 10 MB, documents up to 50 MB; a photo that Telegram would not take as a
photo (too big, not an image) goes as a document.
"""

from __future__ import annotations

from typing import Any

from aiogram import Bot
from aiogram.methods import GetFile, SendDocument, SendPhoto
from aiogram.types import BufferedInputFile, ReplyParameters

from channels.adapter import SentRef
from channels.files import check_size, download
from channels.message import Attachment, Platform, ReplyTarget
from channels.telegram.calls import BotCalls
from switchboard.errors import PlatformError

__all__ = ["MAX_DOWNLOAD_BYTES", "MAX_PHOTO_BYTES", "MAX_UPLOAD_BYTES", "TelegramFiles"]

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024  # getFile refuses bigger files for bots
MAX_PHOTO_BYTES = 10 * 1024 * 1024
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
_PHOTO_MIMES = frozenset({"image/jpeg", "image/png", "image/webp"})
_PLATFORM = str(Platform.TELEGRAM)


class TelegramFiles:
    """File transfer for one bot, beside the adapter's message calls."""

    def __init__(self, *, bot: Bot, api: BotCalls) -> None:
        self._bot = bot
        self._api = api

    async def fetch(self, attachment: Attachment, max_bytes: int) -> bytes:
        if not attachment.file_id:
            raise PlatformError("telegram: attachment has no file id", platform=_PLATFORM)
        cap = min(max_bytes, MAX_DOWNLOAD_BYTES)
        check_size(attachment.size, cap, platform=_PLATFORM)
        with self._api.translated("getFile"):
            file = await self._api.call(GetFile(file_id=attachment.file_id))
        check_size(file.file_size or 0, cap, platform=_PLATFORM)
        if not file.file_path:
            raise PlatformError("telegram: getFile gave no file path", platform=_PLATFORM)
        url = self._bot.session.api.file_url(self._bot.token, file.file_path)
        return await download(url, cap, platform=_PLATFORM)

    async def send_file(self, target: ReplyTarget, name: str, data: bytes, mime: str) -> SentRef:
        check_size(len(data), MAX_UPLOAD_BYTES, platform=_PLATFORM)
        fields: dict[str, Any] = {"chat_id": int(target.chat_id)}
        if target.is_topic and target.thread_anchor:
            fields["message_thread_id"] = int(target.thread_anchor)
        if target.reply_to_id:
            fields["reply_parameters"] = ReplyParameters(
                message_id=int(target.reply_to_id), allow_sending_without_reply=True
            )
        upload = BufferedInputFile(data, filename=name or "file")
        if mime in _PHOTO_MIMES and len(data) <= MAX_PHOTO_BYTES:
            with self._api.translated("sendPhoto"):
                sent = await self._api.call(SendPhoto(photo=upload, **fields), pace=target.chat_id)
        else:
            with self._api.translated("sendDocument"):
                sent = await self._api.call(
                    SendDocument(document=upload, **fields), pace=target.chat_id
                )
        return SentRef(chat_id=target.chat_id, message_ids=(str(sent.message_id),))
