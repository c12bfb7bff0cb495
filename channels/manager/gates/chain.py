"""The gates a message passes before it reaches its thread, as a middleware chain.

Each gate has the shape of aiogram's and slack-bolt's middleware, `async (ctx, call_next)`: it
returns an `Outcome` itself (the message stops here) or hands on to `call_next`. The order is
stated once, where `manager.py` builds the chain (and listed in `gates/__init__.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

from channels.manager.context import MessageContext, Next, Outcome

__all__ = ["Gate", "build_chain"]


class Gate(Protocol):
    async def __call__(self, ctx: MessageContext, call_next: Next) -> Outcome: ...


def build_chain(gates: Sequence[Gate], endpoint: Next) -> Next:
    handler = endpoint
    for gate in reversed(gates):
        handler = functools.partial(gate, call_next=handler)
    return handler
