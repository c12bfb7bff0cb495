"""Conversation context at turn time: what was said before the bot was addressed, or since it
last spoke, handed to the agent with the turn (`TurnContext.context_messages`).

Sources, merged per turn:
- the message a reply points at, as the event carried it (`InboundMessage.quoted`: Telegram's
  `reply_to_message`, `quote` and `external_reply`, Discord's referenced message), free;
- the adapter's `ReadsHistory` (a Slack thread or channel, a Discord thread, channel or reply
  chain), cached in Redis for `CONTEXT_CACHE_TTL_S` with the thread's mark: the cache holds what
  was read for the mark's turn, so a retried turn reads the platform once; a later turn asks
  the platform only for what is newer than the mark (Slack `oldest`, Discord newer than it) and
  merges it into the cache, since messages that did not address the bot never reach it;
- in Telegram groups, the messages the bot observed (`gates/observe.py` records them; Telegram has
  no history API), newest `SWITCHBOARD_TELEGRAM_OBSERVE` per chat or topic.

First contact (the thread has no mark yet) shows the newest messages before the trigger; after
that a turn catches up from its thread's mark (the newest message of the last turn given context:
`ContextMark`), leaving out the bot's own words, which its history already holds. The message a
reply points at is shown whatever its age. The batch's own messages are never repeated. Newest
are kept first, within `context_messages` messages and `context_chars` characters (a reply's
target first of all), then shown oldest first.

Never costs the turn: a DM (where only what a reply points at is added, from the event), a
console session or an answer to a question costs nothing here (no Redis, no API call); any failure to read (a missing scope, a 429, a timeout, the budget) is a
warning and a `switchboard_context_reads_total` count, and the turn goes on without it. Only
messages that passed every gate reach a turn, so only conversations where the bot was addressed
and admitted are ever read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import structlog

from channels import metrics
from channels.adapter import Adapter, HistoryRequest, ReadsHistory
from channels.manager.ports import ContextStore
from channels.message import InboundMessage, Platform
from switchboard.conversation import ContextMark, ContextMessage, ContextState, message_order
from switchboard.errors import PlatformError, PlatformRateLimited, StorageError

if TYPE_CHECKING:
    from channels.manager.config import ManagerConfig
    from channels.manager.turns.batches import Batch

__all__ = ["ConversationHistory", "as_context", "choose", "observed_place"]

_log = structlog.get_logger(__name__)

_DENIED = frozenset(
    {
        "missing_scope",
        "not_in_channel",
        "channel_not_found",
        "thread_not_found",
        "access_denied",
        403,
        404,
        50001,  # Discord: Missing Access
        50013,  # Discord: Missing Permissions
        10003,  # Discord: Unknown Channel
    }
)
_OVERHEAD = 32  # a line's time stamp, separators and notes, roughly
_MIN_PIECE = 200  # a message cut to less than this is left out instead


def _result(exc: PlatformError) -> str:
    if exc.code == "timeout":
        return "timeout"
    return "denied" if exc.code in _DENIED else "failed"


def as_context(msg: InboundMessage) -> ContextMessage:
    """A delivered message as other turns will be shown it."""
    return ContextMessage(
        message_id=msg.provider_message_id,
        sender=msg.sender_name or msg.sender_id,
        sent_at=msg.sent_at,
        text=msg.text,
        attachments=tuple(a.name or a.kind for a in msg.attachments),
        reply_to_id=msg.reply_to_id or "",
    )


def observed_place(msg: InboundMessage) -> tuple[str, str] | None:
    """Where a Telegram group message is recorded: its chat, or its forum topic."""
    if msg.platform is not Platform.TELEGRAM or msg.is_dm or msg.button is not None:
        return None
    if msg.is_topic and msg.thread_anchor:
        return str(msg.platform), f"{msg.chat_id}:t{msg.thread_anchor}"
    return str(msg.platform), msg.chat_id


def _cost(message: ContextMessage) -> int:
    return (
        len(message.sender)
        + len(message.text)
        + len(message.quote)
        + sum(len(a) + 2 for a in message.attachments)
        + _OVERHEAD
    )


def _cut(message: ContextMessage, room: int) -> ContextMessage | None:
    keep = room - (_cost(message) - len(message.text)) - 2
    if keep < _MIN_PIECE:
        return None
    return replace(message, text=message.text[:keep].rstrip() + " …")


def choose(
    candidates: Iterable[ContextMessage],
    *,
    trigger: str,
    after: str | None,
    exclude: frozenset[str],
    max_messages: int,
    max_chars: int,
) -> tuple[ContextMessage, ...]:
    """The messages a turn is shown, oldest first. Candidates listed first win a duplicate id
    (pass the quoted ones first: they carry `replied_to` and `quote`). Pure."""
    top = message_order(trigger)
    since = message_order(after) if after is not None else None
    unique: dict[str, ContextMessage] = {}
    for index, message in enumerate(candidates):
        key = message.message_id or f"#{index}"
        if message.message_id in exclude or message.message_id == trigger:
            continue
        if after is not None and message.is_self:
            continue  # the bot's own words are in its history already
        if not message.replied_to:
            order = message_order(message.message_id)
            if order >= top or (since is not None and order <= since):
                continue
        unique.setdefault(key, message)
    ranked = sorted(
        unique.values(),
        key=lambda m: (not m.replied_to, tuple(-part for part in message_order(m.message_id))),
    )
    chosen: list[ContextMessage] = []
    chars = 0
    for message in ranked[:max_messages]:
        cost = _cost(message)
        if chars + cost > max_chars:
            piece = _cut(message, max_chars - chars)
            if piece is not None:
                chosen.append(piece)
            break
        chosen.append(message)
        chars += cost
    return tuple(sorted(chosen, key=lambda m: message_order(m.message_id)))


class ConversationHistory:
    """The context a batch's turn is shown (see the module docstring)."""

    def __init__(
        self,
        store: ContextStore | None,
        *,
        max_messages: int,
        max_chars: int,
        timeout_s: float,
        observe_keep: int,
    ) -> None:
        self._store = store
        self._max_messages = max_messages
        self._max_chars = max_chars
        self._timeout_s = timeout_s
        self._observe_keep = observe_keep if store is not None else 0

    @classmethod
    def configured(cls, store: ContextStore | None, config: ManagerConfig) -> ConversationHistory:
        return cls(
            store,
            max_messages=config.context_messages,
            max_chars=config.context_chars,
            timeout_s=config.context_timeout_s,
            observe_keep=config.observe_keep,
        )

    async def gather(
        self, adapter: Adapter, thread_id: str, batch: Batch, *, resume: bool = False
    ) -> tuple[ContextMessage, ...]:
        last = batch.last
        if resume or last.platform is Platform.CONSOLE or self._max_messages <= 0:
            return ()
        quoted = [q for m in batch.messages for q in m.quoted]
        if last.is_dm:  # the bot sees a whole DM: only what a reply points at, and free
            own = frozenset(m.provider_message_id for m in batch.messages)
            mine = [q for q in quoted if not q.is_self]
            return self._choose(mine, last.provider_message_id, None, own) if mine else ()
        reads = isinstance(adapter, ReadsHistory)
        place = observed_place(last) if self._observe_keep > 0 else None
        trigger = last.provider_message_id
        exclude = frozenset(m.provider_message_id for m in batch.messages)
        if self._store is None or not (reads or place):
            return self._choose(quoted, trigger, None, exclude)
        try:
            return await self._gather(adapter, thread_id, batch, quoted, place, exclude)
        except StorageError as exc:  # context is a courtesy: the turn goes on without it
            _log.warning("context.store_failed", error=str(exc))
            return self._choose(quoted, trigger, None, exclude)

    async def _gather(
        self,
        adapter: Adapter,
        thread_id: str,
        batch: Batch,
        quoted: list[ContextMessage],
        place: tuple[str, str] | None,
        exclude: frozenset[str],
    ) -> tuple[ContextMessage, ...]:
        last = batch.last
        trigger = last.provider_message_id
        reads = isinstance(adapter, ReadsHistory)
        assert self._store is not None
        state = await self._store.load(
            thread_id, observed=place, before=trigger, limit=self._max_messages
        )
        after = state.mark.since(trigger) if state.mark is not None else None
        fetched: Sequence[ContextMessage] | None = ()
        cache: Sequence[ContextMessage] | None = None
        covered = state.cached is not None and state.mark is not None and state.mark.at == trigger
        if reads:
            assert isinstance(adapter, ReadsHistory)
            fetched = await self._fetched(adapter, state, last, after, covered=covered)
            if fetched is not None and not covered:
                fetched = cache = _merged(state.cached or (), fetched, self._max_messages)
        chosen = self._choose([*quoted, *(fetched or ()), *state.observed], trigger, after, exclude)
        mark = ContextMark(at=trigger, previous=after)
        writes: list[Awaitable[None]] = []
        if fetched is not None:  # a failed read leaves the mark: the next turn tries again
            writes.append(self._save(thread_id, state, mark, cache))
        if place is not None:
            writes.append(self._record(place, batch.messages))
        try:
            await asyncio.gather(*writes)
        except StorageError as exc:  # what was read still serves this turn
            _log.warning("context.store_failed", error=str(exc))
        _log.info(
            "context.gathered",
            shown=len(chosen),
            catch_up=after is not None,
            cached=reads and covered,
        )
        return chosen

    def _choose(
        self,
        candidates: Iterable[ContextMessage],
        trigger: str,
        after: str | None,
        exclude: frozenset[str],
    ) -> tuple[ContextMessage, ...]:
        return choose(
            candidates,
            trigger=trigger,
            after=after,
            exclude=exclude,
            max_messages=self._max_messages,
            max_chars=self._max_chars,
        )

    async def _fetched(
        self,
        adapter: ReadsHistory,
        state: ContextState,
        last: InboundMessage,
        after: str | None,
        *,
        covered: bool,
    ) -> Sequence[ContextMessage] | None:
        """The platform's messages: the cache when it was read for this very turn (a retry),
        else read now, newer than `after` (None: it failed)."""
        platform = str(last.platform)
        if covered:
            assert state.cached is not None
            metrics.CONTEXT_READS.labels(platform=platform, result="cached").inc()
            return state.cached
        request = HistoryRequest(msg=last, after=after, limit=self._max_messages)
        try:
            async with asyncio.timeout(self._timeout_s):
                found = tuple(await adapter.read_history(request))
        except TimeoutError:
            result, code = "timeout", None
        except PlatformRateLimited as exc:
            result, code = "rate_limited", exc.code
        except PlatformError as exc:
            result, code = _result(exc), exc.code
        else:
            metrics.CONTEXT_READS.labels(platform=platform, result="fetched").inc()
            _log.info("context.fetched", count=len(found), catch_up=after is not None)
            return found
        metrics.CONTEXT_READS.labels(platform=platform, result=result).inc()
        _log.warning("context.read_failed", result=result, code=code)
        return None

    async def _save(
        self,
        thread_id: str,
        state: ContextState,
        mark: ContextMark,
        cache: Sequence[ContextMessage] | None,
    ) -> None:
        if cache is None and state.mark == mark:
            return  # a retried batch: nothing new to remember
        assert self._store is not None
        await self._store.save(thread_id, mark=mark, cache=cache)

    async def _record(self, place: tuple[str, str], messages: Sequence[InboundMessage]) -> None:
        """The batch's own messages join the group's record, for the chat's later turns."""
        assert self._store is not None
        platform, where = place
        await asyncio.gather(
            *(
                self._store.observe(platform, where, as_context(m), keep=self._observe_keep)
                for m in messages
                if not m.observed and m.button is None
            )
        )


def _merged(
    held: Sequence[ContextMessage], found: Sequence[ContextMessage], keep: int
) -> tuple[ContextMessage, ...]:
    """The cache after a read: what it held (less the messages an earlier reply pointed at,
    which belonged to that turn) with what was just read, one per id, the newest `keep` of the
    thread plus the ones this turn's reply points at."""
    fresh = {m.message_id for m in found}
    kept = [m for m in held if not m.replied_to and m.message_id not in fresh]
    plain = sorted(
        [*kept, *(m for m in found if not m.replied_to)],
        key=lambda m: message_order(m.message_id),
    )
    return (*(m for m in found if m.replied_to), *plain[-keep:])
