"""aiogram exceptions → switchboard errors, with the bot token scrubbed."""

from __future__ import annotations

import logging

from aiogram import loggers
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramUnauthorizedError,
)
from aiogram.methods import SendMessage

from channels.telegram.errors import (
    TokenRedaction,
    is_entity_error,
    is_not_modified,
    translate,
)
from switchboard.errors import PlatformAuthError, PlatformError, PlatformRateLimited

TOKEN = "42:SECRET-token-value"
METHOD = SendMessage(chat_id=1, text="x")


def test_retry_after_becomes_rate_limited_with_its_seconds() -> None:
    err = translate(TelegramRetryAfter(METHOD, "Too Many Requests", 7), action="send", token=TOKEN)
    assert isinstance(err, PlatformRateLimited)
    assert err.retry_after == 7.0 and err.platform == "telegram" and err.category == "rate_limited"


def test_unauthorized_becomes_auth_error() -> None:
    err = translate(TelegramUnauthorizedError(METHOD, "Unauthorized"), action="start", token=TOKEN)
    assert isinstance(err, PlatformAuthError) and err.code == 401


def test_other_errors_keep_a_code() -> None:
    assert translate(TelegramBadRequest(METHOD, "x"), action="a", token=TOKEN).code == 400
    assert translate(TelegramForbiddenError(METHOD, "x"), action="a", token=TOKEN).code == 403
    err = translate(TelegramNetworkError(METHOD, "down"), action="a", token=TOKEN)
    assert type(err) is PlatformError and err.code == "network"


def test_token_in_an_error_message_is_redacted() -> None:
    exc = TelegramNetworkError(METHOD, f"InvalidURL: http://h/bot{TOKEN}/sendMessage")
    err = translate(exc, action="send", token=TOKEN)
    assert TOKEN not in str(err) and "<token>" in str(err)


def test_entity_and_not_modified_errors_are_recognised() -> None:
    bad = TelegramBadRequest(METHOD, "Bad Request: can't parse entities: Unsupported start tag")
    assert is_entity_error(bad) and not is_not_modified(bad)
    same = TelegramBadRequest(METHOD, "Bad Request: message is not modified: same content")
    assert is_not_modified(same) and not is_entity_error(same)


def test_token_redaction_scrubs_aiogram_log_records(caplog) -> None:  # type: ignore[no-untyped-def]
    redaction = TokenRedaction(TOKEN)
    redaction.install()
    try:
        with caplog.at_level(logging.ERROR, logger="aiogram.dispatcher"):
            loggers.dispatcher.error(
                "Failed to fetch updates - %s", f"http://h/bot{TOKEN}/getUpdates"
            )
    finally:
        redaction.remove()
    assert TOKEN not in caplog.text and "<token>" in caplog.text
