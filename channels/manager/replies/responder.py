"""Everything the manager says in chat: rendered replies, notices, typing, errors with a ref id."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import replace

import structlog

from channels import metrics
from channels.adapter import AckKind, Adapter, Chunk, SentRef
from channels.manager.ports import FailureStore
from channels.message import InboundMessage, ReplyTarget
from channels.render import render_chunks
from switchboard.errors import SwitchboardError
from switchboard.state import FailureRecord

__all__ = ["FALLBACK_REPLY", "Responder", "error_text"]

_log = structlog.get_logger(__name__)

_USER_MESSAGES = {
    "agent": "The AI model couldn't answer just now.",
    "storage": "I couldn't reach my storage just now.",
    "rate_limited": "The chat platform is rate-limiting me.",
    "platform": "The chat platform rejected my reply.",
    "auth": "I'm not authorised on this platform.",
    "config": "I'm misconfigured.",
    "internal": "Something went wrong on my side.",
}
FALLBACK_REPLY = "I don't have anything to add to that. Could you rephrase?"


def error_text(category: str, ref: str) -> str:
    return f"Sorry — {_USER_MESSAGES.get(category, _USER_MESSAGES['internal'])} (ref {ref})"


class Responder:
    def __init__(self, *, typing_delay_s: float, failures: FailureStore | None = None) -> None:
        self._typing_delay_s = typing_delay_s
        self._failures = failures
        self._recording: set[asyncio.Task[None]] = set()

    async def send_text(self, adapter: Adapter, target: ReplyTarget, text: str) -> SentRef:
        return await adapter.send(target, render_chunks(text, adapter.capabilities))

    def reply_chunks(self, adapter: Adapter, text: str) -> list[Chunk]:
        """The reply as the platform shows it (the same whether streamed or not)."""
        caps = adapter.capabilities
        return render_chunks(text, caps) or render_chunks(FALLBACK_REPLY, caps)

    async def send_reply(self, adapter: Adapter, target: ReplyTarget, text: str) -> SentRef:
        sent = await adapter.send(target, self.reply_chunks(adapter, text))
        metrics.MESSAGES_OUT.labels(platform=str(target.platform)).inc(len(sent.message_ids))
        return sent

    async def acknowledge(self, adapter: Adapter, msg: InboundMessage, kind: AckKind) -> None:
        try:
            await adapter.acknowledge(msg, kind)
        except SwitchboardError as exc:
            _log.warning("ack.failed", category=exc.category, kind=str(kind))
        except Exception as exc:  # a reaction is a courtesy: never an answer's failure
            _log.error("ack.crashed", kind=str(kind), exc_info=exc)

    async def typing_until(
        self, adapter: Adapter, target: ReplyTarget, answered: asyncio.Event
    ) -> None:
        """Show 'typing…' only once a turn outlasts the delay: an instant answer needs no
        indicator (nor the API call and rate budget it costs). A failing indicator never fails
        the turn."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._typing_delay_s):  # a timer, not wait_for's task
                await answered.wait()
            return
        try:
            async with adapter.typing(target):
                await answered.wait()
        except SwitchboardError as exc:
            _log.warning("typing.failed", category=exc.category)
        except Exception as exc:  # a supervised side task: log it, never fail the turn
            _log.error("typing.crashed", error=type(exc).__name__, exc_info=exc)

    def failure_text(self, exc: BaseException, event: str = "turn.failed") -> str:
        """The one place an exception becomes chat text: logged once with a reference id, and
        the category's message with that id for the user."""
        ref = secrets.token_hex(4)
        category = exc.category if isinstance(exc, SwitchboardError) else "internal"
        metrics.ERRORS.labels(category=category).inc()
        _log.error(event, ref=ref, category=category, exc_info=exc)
        self._record(ref, category, event, exc)
        return error_text(category, ref)

    def _record(self, ref: str, category: str, event: str, exc: BaseException) -> None:
        """Keep the failure for the console beside the log line, off the answer's path: the
        user's error reply never waits on (nor fails with) this write. Where it happened comes
        from the log context the adapter and manager bound."""
        if self._failures is None:
            return
        bound = structlog.contextvars.get_contextvars()
        failure = FailureRecord(
            ref=ref,
            at=time.time(),
            category=category,
            event=event,
            error=type(exc).__name__,
            platform=str(bound.get("platform", "")),
            chat_id=str(bound.get("chat_id", "")),
            thread_id=str(bound.get("thread_id", "")),
        )
        task = asyncio.get_running_loop().create_task(self._keep(failure))
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)

    async def _keep(self, failure: FailureRecord) -> None:
        assert self._failures is not None
        try:
            await self._failures.record(failure)
        except Exception as exc:  # a supervised side task: the failure is logged already
            _log.warning("failure.record_failed", ref=failure.ref, error=type(exc).__name__)

    async def report(self, adapter: Adapter, target: ReplyTarget, exc: BaseException) -> None:
        """Say `failure_text` now, outside a turn (a gate failed); a failed send is logged."""
        text = self.failure_text(exc)
        try:
            await adapter.send(target, [Chunk(text=text, plain=text)])
        except Exception as send_exc:
            _log.error("error_reply.failed", error=type(send_exc).__name__)

    async def report_on(self, adapter: Adapter, msg: InboundMessage, exc: BaseException) -> None:
        """`report` about one message: a native command hears it through its own answer (a
        deferred Discord interaction would otherwise wait until it expires)."""
        if msg.native is None:
            await self.report(adapter, msg.target, exc)
            return
        text = self.failure_text(exc)
        try:
            await adapter.notify(msg, text, private=True)
        except Exception as send_exc:
            _log.error("error_reply.failed", error=type(send_exc).__name__)

    async def refuse(self, adapter: Adapter, msg: InboundMessage, text: str) -> None:
        """A message that will not be answered (queue full, too long, rate or budget limit):
        said as a reply to that message, so in a busy DM it is clear which one was refused; a
        native command's refusal answers the command itself, to the sender alone."""
        if msg.native is not None:
            await adapter.notify(msg, text, private=True)
            return
        target = replace(msg.target, reply_to_id=msg.provider_message_id or None)
        await adapter.send(target, [Chunk(text=text, plain=text)])

    async def notice(self, adapter: Adapter, target: ReplyTarget, text: str) -> None:
        """A side remark within a turn (a file left out): the turn goes on if it is refused."""
        try:
            await self.send_text(adapter, target, text)
        except SwitchboardError as exc:
            _log.warning("notice.failed", category=exc.category)
