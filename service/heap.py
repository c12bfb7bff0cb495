"""Start-up objects out of the garbage collector's way (`gc.freeze`).

By the time the service is up, its heap holds several hundred thousand objects that live as
long as the process: modules, classes, pydantic and LangGraph schemas, the compiled agent graph.
CPython's full (generation 2) collection walks every tracked object each time it runs, and a
burst of turns allocates enough to trigger one every few hundred messages. Frozen objects move
to a permanent generation that collections skip, so a full collection costs only what was
allocated since start-up. Resident memory is unchanged (nothing is copied; `bench/memory.py`
prints both numbers). The price: a reference cycle among frozen objects that later becomes
garbage is never freed, which is fine for objects that live until exit anyway.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_startup_heap"]


def freeze_startup_heap() -> int:
    """Collect start-up garbage (so it is freed, not frozen), then freeze the survivors.

    Returns how many objects are frozen, for the start-up log.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
