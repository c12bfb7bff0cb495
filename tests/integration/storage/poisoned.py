"""A checkpoint value overwritten in Redis with a msgpack ext that names `os.system`: the form
LangGraph's permissive msgpack mode imports and calls on load. Shared by the storage and service
tests of the strict serializer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_SINGLE_ARG

from storage import Keys
from storage.checkpoint import strict_serde

__all__ = ["poison_messages"]

_SERDE = strict_serde()


def _call(marker: Path) -> ormsgpack.Ext:
    """`os.system("touch <marker>")` as a stored value: (module, attr, argument)."""
    return ormsgpack.Ext(
        EXT_CONSTRUCTOR_SINGLE_ARG, ormsgpack.packb(["os", "system", f"touch {marker}"])
    )


async def poison_messages(redis: Any, keys: Keys, thread_id: str, marker: Path) -> list[bytes]:
    """Append the call to every stored version of the thread's `messages` channel, keeping the
    real messages; returns the blobs as written (`<type>\\0<bytes>`)."""
    blob_key = keys.checkpoint(thread_id, "blob")
    written: list[bytes] = []
    for field, raw in (await redis.hgetall(blob_key)).items():
        _ns, channel, _version = field.split(b"\0", 2)
        if channel != b"messages":
            continue
        kind, data = raw.split(b"\0", 1)
        messages = list(_SERDE.loads_typed((kind.decode(), data)))
        kind_out, data_out = _SERDE.dumps_typed([*messages, _call(marker)])
        poisoned = kind_out.encode() + b"\0" + data_out
        await redis.hset(blob_key, field, poisoned)
        written.append(poisoned)
    return written
