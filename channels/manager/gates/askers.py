"""Who may act on someone's run: the one rule behind buttons and their typed twins.

A clarification question is answered by its asker alone, whether the answer is a button press or
a typed message. A running answer is stopped, and a conversation busy with someone's answer is
reset (`/new`) or re-moded (`/queue MODE`), by that answer's asker or a workspace admin, whether
by the Stop button or by typing. The asker always comes from our own state (the question record,
the queue front of the running batch), never from anything a client sends (a button's custom id
or value). In a DM the person is always the asker.
"""

from __future__ import annotations

from dataclasses import dataclass

from channels.adapter import Adapter
from channels.manager.codec import CorruptPayload, decode_message
from channels.message import InboundMessage

__all__ = ["Asker", "asker_of", "is_asker", "may_act"]


@dataclass(frozen=True, slots=True)
class Asker:
    """The person whose message started a run, as the queue holds it."""

    sender_id: str
    name: str


def asker_of(payload: bytes | None) -> Asker | None:
    """The sender of a queued message (the running batch's first), or None."""
    if payload is None:
        return None
    try:
        msg = decode_message(payload)
    except CorruptPayload:
        return None
    return Asker(msg.sender_id, msg.sender_name or "the person who asked")


def is_asker(msg: InboundMessage, asker_id: str) -> bool:
    """The sender is the asker (always so in a DM)."""
    return msg.is_dm or msg.sender_id == asker_id


async def may_act(adapter: Adapter, msg: InboundMessage, asker_id: str | None) -> bool:
    """The asker-or-admin rule: the sender may act on a run of `asker_id` (None: nobody's
    run, anyone may). The platform is asked about admins only for someone else's run."""
    if asker_id is None or is_asker(msg, asker_id):
        return True
    return await adapter.is_workspace_admin(msg)
