"""Suite-wide set-up: logging as the tests need it.

- structlog's default renderer formats an exception's traceback with rich, locals and all: 10–15
  s of blocked event loop per logged failure in a test process (long enough to cost a poller its
  lease), where the service itself logs them plainly (`service.logging`). Tests get the plain one.
- Tests that run the CLI in-process call `configure_logging`, whose `cache_logger_on_first_use`
  would pin every module logger first used afterwards to that configuration for the rest of the
  process, and its level filter would drop the debug events later tests capture. In tests loggers
  are never cached, and each test ends with logging as it found it: root handlers and level, and
  every named logger's level (`configure_logging` quiets `discord.gateway` and other libraries,
  which blinded a later test that reads their debug lines, depending on test order).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

_configure = structlog.configure


def _configure_uncached(*args: Any, **kwargs: Any) -> None:
    kwargs["cache_logger_on_first_use"] = False
    _configure(*args, **kwargs)


structlog.configure = _configure_uncached  # type: ignore[assignment]

_processors = list(structlog.get_config()["processors"])
if _processors and isinstance(_processors[-1], structlog.dev.ConsoleRenderer):
    _processors[-1] = structlog.dev.ConsoleRenderer(
        colors=False, exception_formatter=structlog.dev.plain_traceback
    )
    structlog.configure(processors=_processors)


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = _levels()
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in _levels().items():
        if levels.get(name, logging.NOTSET) != was:
            logging.getLogger(name).setLevel(levels.get(name, logging.NOTSET))


def _levels() -> dict[str, int]:
    return {
        name: logger.level
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
