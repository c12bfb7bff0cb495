"""Logging set-up: structlog with context variables, stdlib logging underneath for libraries.

Secrets are scrubbed from every line (ours and libraries') as a last line of defence: SDKs put bot
tokens in URLs, and a token in a log is a leaked token.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, MutableMapping
from typing import Any

import structlog

__all__ = ["configure_logging"]

_MASK = "***"


class _Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = tuple(s for s in secrets if s and len(s) >= 6)

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, _MASK)
        return text

    def __call__(
        self, _logger: Any, _name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        if self._secrets:
            for key, value in event_dict.items():
                if isinstance(value, str):
                    event_dict[key] = self.scrub(value)
        return event_dict


class _RedactingFilter(logging.Filter):
    def __init__(self, redactor: _Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            try:
                record.msg = self._redactor.scrub(record.getMessage())
                record.args = None
            except (TypeError, ValueError):
                pass
        return True


def configure_logging(
    *, level: str = "INFO", fmt: str = "console", secrets: Iterable[str] = (), stream: Any = None
) -> None:
    redactor = _Redactor(secrets)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info if fmt == "json" else structlog.dev.set_exc_info,
        redactor,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    handler.addFilter(_RedactingFilter(redactor))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in (
        "httpx",
        "httpcore",
        "httpx2",  # the openai SDK's HTTP client since it moved off httpx
        "httpcore2",
        "openai",
        "aiohttp.access",
        "discord.gateway",
        "slack_bolt",
        "aiogram.event",
    ):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
