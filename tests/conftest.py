"""Suite-wide set-up.

structlog's default renderer formats an exception's traceback with rich, locals and all: 10–15 s
of blocked event loop per logged failure in a test process (long enough to cost a poller its
lease), where the service itself logs them plainly (`service.logging`). Tests that set up logging
the way the service does override this.
"""

from __future__ import annotations

import structlog

_processors = list(structlog.get_config()["processors"])
if _processors and isinstance(_processors[-1], structlog.dev.ConsoleRenderer):
    _processors[-1] = structlog.dev.ConsoleRenderer(
        colors=False, exception_formatter=structlog.dev.plain_traceback
    )
    structlog.configure(processors=_processors)
