"""A message's effective settings under the current bindings, resolved in memory.

The rules are held in process (loaded once, swapped whole on reload); the only I/O is the
linked account, looked up only when some rule matches on `account`, and kept for a minute per
place so a busy channel costs one lookup a minute, not one per turn.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from channels.bindings.rules import NO_BINDING, Bindings, Effective, Subject
from channels.message import InboundMessage

__all__ = ["AccountOf", "BindingResolver", "subject_of"]

AccountOf = Callable[[InboundMessage], Awaitable[str | None]]
"""The Switchboard account a message's workspace (or, in a DM, its sender) is linked to."""

ACCOUNT_TTL_S = 60.0  # a new or removed link reaches routing within a minute
_MAX_CACHED = 10_000  # places whose account is remembered; the oldest go first


def subject_of(msg: InboundMessage, account: str | None = None) -> Subject:
    return Subject(
        platform=str(msg.platform),
        workspace=msg.workspace_id,
        channel=msg.chat_id,
        user=msg.sender_id,
        roles=msg.sender_roles,
        parent=msg.parent_id,
        account=account,
    )


class BindingResolver:
    def __init__(
        self,
        bindings: Bindings,
        *,
        account_of: AccountOf | None = None,
        account_ttl_s: float = ACCOUNT_TTL_S,
    ) -> None:
        self._bindings = bindings
        self._account_of = account_of
        self._ttl_s = account_ttl_s
        self._accounts: dict[tuple[str, ...], tuple[str | None, float]] = {}

    @property
    def bindings(self) -> Bindings:
        return self._bindings

    def replace(self, bindings: Bindings) -> None:
        """Take new rules (a reload): every later resolution uses them."""
        self._bindings = bindings

    async def effective(self, msg: InboundMessage) -> Effective:
        bindings = self._bindings
        if not bindings.rules:
            return NO_BINDING
        account = await self._account(msg) if bindings.uses_account else None
        return bindings.resolve(subject_of(msg, account))

    async def _account(self, msg: InboundMessage) -> str | None:
        if self._account_of is None:
            return None
        place = (
            str(msg.platform),
            msg.sender_id if msg.is_dm else "",
            msg.workspace_id or msg.chat_id,
        )
        now = time.monotonic()
        cached = self._accounts.get(place)
        if cached is not None and cached[1] > now:
            return cached[0]
        account = await self._account_of(msg)
        if len(self._accounts) >= _MAX_CACHED:
            self._accounts.pop(next(iter(self._accounts)))
        self._accounts[place] = (account, now + self._ttl_s)
        return account
