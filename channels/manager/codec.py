"""An `InboundMessage` as inbox and queue payload bytes (JSON), and back.

The payload is the contract between ingress and workers, which may run different releases during
a rolling deploy: unknown fields are ignored, missing ones take their defaults. `raw` never
travels: what a worker reads again of a payload is a typed handle (`DiscordHandle`), so no Slack
`response_url` of an envelope, interaction token or other person's payload is persisted, and a
worker never parses a platform's wire format.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, fields, replace
from typing import Any

from channels.message import (
    Attachment,
    ButtonPress,
    DiscordHandle,
    InboundMessage,
    NativeCommand,
    Platform,
    Vote,
)
from switchboard.conversation import ContextMessage

__all__ = ["CorruptPayload", "decode_message", "encode_message"]

_FIELDS = {f.name for f in fields(InboundMessage)}


class CorruptPayload(ValueError):
    """Not a message this release can read."""


def encode_message(msg: InboundMessage) -> bytes:
    data = asdict(replace(msg, raw=None))  # asdict deep-copies: SDK objects must not reach it
    del data["raw"]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode()


@functools.lru_cache(maxsize=128)
def decode_message(payload: bytes | str) -> InboundMessage:
    """The message a payload holds. One payload is read several times on its way (the entry's
    gates, then its turn's age check, question check and batch), so the last payloads' messages
    are kept: an `InboundMessage` and everything in it is frozen, and a corrupt payload raises
    every time (an exception is never cached)."""
    try:
        data: dict[str, Any] = json.loads(payload)
        if not isinstance(data, dict):
            raise TypeError("payload is not an object")
        known = {k: v for k, v in data.items() if k in _FIELDS}
        known["platform"] = Platform(known["platform"])
        known["attachments"] = tuple(
            Attachment(**_only(Attachment, a)) for a in known.get("attachments") or ()
        )
        known["event_ids"] = tuple(str(e) for e in known.get("event_ids") or ())
        known["sender_roles"] = tuple(str(r) for r in known.get("sender_roles") or ())
        known["quoted"] = tuple(ContextMessage.from_dict(q) for q in known.get("quoted") or ())
        button = known.get("button")
        known["button"] = ButtonPress(**_only(ButtonPress, button)) if button else None
        vote = known.get("vote")
        known["vote"] = Vote(**_only(Vote, vote)) if vote else None
        native = known.get("native")
        known["native"] = NativeCommand(**_only(NativeCommand, native)) if native else None
        legacy = known.pop("raw", None)  # an older ingress's payload: only the handle's fields
        handle = known.get("handle") or (legacy if known["platform"] is Platform.DISCORD else None)
        known["handle"] = _handle(handle) if handle else None
        return InboundMessage(**known)
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptPayload(f"unreadable message payload ({exc.__class__.__name__})") from None


def _handle(data: Any) -> DiscordHandle:
    fields_ = {k: str(v) for k, v in _only(DiscordHandle, data).items() if v is not None}
    return DiscordHandle(**fields_)


def _only(cls: type, data: Any) -> dict[str, Any]:
    """The fields `cls` knows: a newer release may have added some (rolling deploys)."""
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} is not an object")
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}
