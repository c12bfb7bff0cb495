"""aiogram exceptions become `switchboard.errors` here, and the bot token never leaves.

aiogram builds request URLs as `<base>/bot<token>/<method>`, so any error or log line that quotes
a URL carries the token. Every message we build is passed through `redact`, and `TokenRedaction`
scrubs aiogram's own loggers while an adapter runs.
"""

from __future__ import annotations

import logging

from aiogram import loggers
from aiogram.exceptions import (
    AiogramError,
    ClientDecodeError,
    DetailedAiogramError,
    TelegramBadRequest,
    TelegramConflictError,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)

from switchboard.errors import PlatformAuthError, PlatformError, PlatformRateLimited

__all__ = [
    "PLATFORM",
    "TokenRedaction",
    "is_entity_error",
    "is_not_modified",
    "translate",
]

PLATFORM = "telegram"
_HIDDEN = "<token>"
_CODES: tuple[tuple[type[AiogramError], str | int], ...] = (
    (TelegramEntityTooLarge, 413),  # before its base class, TelegramNetworkError
    (TelegramNetworkError, "network"),
    (TelegramBadRequest, 400),
    (TelegramForbiddenError, 403),
    (TelegramNotFound, 404),
    (TelegramConflictError, 409),
    (TelegramMigrateToChat, "migrated"),
    (TelegramServerError, 500),
    (ClientDecodeError, "decode"),
)
_AIOGRAM_LOGGERS = (
    loggers.dispatcher,
    loggers.event,
    loggers.middlewares,
    loggers.webhook,
    loggers.scene,
)


def redact(text: str, token: str) -> str:
    return text.replace(token, _HIDDEN) if token else text


def translate(exc: AiogramError, *, action: str, token: str) -> PlatformError:
    """The switchboard error for an aiogram one, with a message that cannot contain the token."""
    detail = exc.message if isinstance(exc, DetailedAiogramError | ClientDecodeError) else ""
    message = redact(f"telegram {action} failed: {type(exc).__name__}: {detail}", token)
    if isinstance(exc, TelegramRetryAfter):
        return PlatformRateLimited(message, platform=PLATFORM, retry_after=float(exc.retry_after))
    if isinstance(exc, TelegramUnauthorizedError):
        return PlatformAuthError(message, platform=PLATFORM, code=401)
    code: str | int = "unknown"
    for kind, kind_code in _CODES:
        if isinstance(exc, kind):
            code = kind_code
            break
    return PlatformError(message, platform=PLATFORM, code=code)


def is_entity_error(exc: TelegramBadRequest) -> bool:
    """Telegram refused our HTML ("Bad Request: can't parse entities: ...")."""
    return "can't parse entities" in exc.message.lower()


def is_not_modified(exc: TelegramBadRequest) -> bool:
    """An edit to the text the message already has; nothing to do."""
    return "message is not modified" in exc.message.lower()


class TokenRedaction(logging.Filter):
    """Replaces the token in aiogram's log records; installed by `start`, removed by `stop`."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self._token in message:
            record.msg = redact(message, self._token)
            record.args = None
        return True

    def install(self) -> None:
        for logger in _AIOGRAM_LOGGERS:
            logger.addFilter(self)

    def remove(self) -> None:
        for logger in _AIOGRAM_LOGGERS:
            logger.removeFilter(self)
