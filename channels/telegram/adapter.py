"""Telegram adapter (aiogram 3): polling or webhook into one Dispatcher, replies in HTML.

The Bot talks to `api_base` through an `AiohttpSession` (`TelegramAPIServer.from_base`), the one
seam a self-hosted Bot API server or the tests' fake server needs. Polling and the webhook route
feed the same Dispatcher, whose two handlers only build `InboundMessage`s (pure functions in
`telegram_inbound.py`) and hand them to `deliver`.

Every outgoing call goes through `BotCalls` (`telegram_calls.py`): paced per chat, retried after
each 429's `retry_after`, HTML with a plain-text fallback, and translated to `switchboard.errors`
at the public methods below, with the token scrubbed from every message.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any, Literal

import structlog
from aiogram import Bot, Dispatcher, Router
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import AiogramError, TelegramBadRequest
from aiogram.methods import (
    AnswerCallbackQuery,
    DeleteWebhook,
    EditMessageText,
    GetChatMember,
    GetMe,
    SendChatAction,
    SendMessage,
    SetMessageReaction,
    SetWebhook,
)
from aiogram.types import (
    CallbackQuery,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    MessageGenerationStopped,
    MessageReactionUpdated,
    ReactionTypeEmoji,
    ReplyParameters,
    Update,
)
from aiogram.utils.token import TokenValidationError
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from channels.adapter import (
    UNSUPPORTED_TEXT,
    AckKind,
    Capabilities,
    Chunk,
    Deliver,
    Markup,
    QuestionPrompt,
    ReplyStream,
    SentRef,
    private_undelivered_text,
)
from channels.bindings import DEFAULT_POLICY, PlacePolicy, PolicyFor, Subject
from channels.message import Attachment, InboundMessage, Platform, ReplyTarget
from channels.telegram.calls import BotCalls
from channels.telegram.errors import TokenRedaction, is_not_modified
from channels.telegram.files import MAX_UPLOAD_BYTES, TelegramFiles
from channels.telegram.inbound import (
    BotIdentity,
    callback_data,
    is_for_bot,
    to_inbound,
    to_observed,
    wants_text_notice,
)
from channels.telegram.menus import sync_menus
from channels.telegram.pacing import Pacer
from channels.telegram.polled import PolledBatch
from channels.telegram.reactions import reaction_vote
from channels.telegram.stop import stop_to_inbound
from channels.telegram.stream import DraftStream, edit_stream
from switchboard.errors import ConfigError, PlatformError, SwitchboardError

__all__ = ["LIMITS", "BotIdentity", "TelegramAdapter", "is_for_bot", "to_inbound"]

LIMITS = Capabilities(
    max_len=4096,
    len_unit="utf16",
    markup=Markup.TELEGRAM_HTML,
    can_edit=True,
    buttons=True,
    reactions=True,
    votes="reactions",
)
QUEUED_TEXT = "Got it — I'll answer this right after the current reply."
STALE_BUTTON_TEXT = "This button no longer works."
WEBHOOK_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"

_ALLOWED_UPDATES = ["message", "callback_query"]
_TYPING_EVERY_S = 4.0  # Telegram shows "typing…" for ~5 s per sendChatAction
_POLL_TIMEOUT_S = 25
_STOP_TIMEOUT_S = 10.0
_REACTIONS = {AckKind.QUEUED: "👀", AckKind.STEERED: "✍"}
_MAX_LABEL = 60
_ADMIN_STATUSES = frozenset({"creator", "administrator"})
_UNDELIVERED = frozenset({400, 403})  # Telegram refused the private message: nothing was sent

_log = structlog.get_logger(__name__)


class TelegramAdapter:
    """Satisfies `channels.base.Adapter` for one bot token."""

    platform = Platform.TELEGRAM
    capabilities = LIMITS

    def __init__(
        self,
        *,
        token: str,
        deliver: Deliver,
        api_base: str = "https://api.telegram.org",
        mode: Literal["polling", "webhook"] = "polling",
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        pacer: Pacer | None = None,
        observe: bool = False,
        votes: bool = False,
        policy: PolicyFor | None = None,
    ) -> None:
        if mode == "webhook" and not (webhook_url and webhook_secret):
            raise ConfigError(
                "TELEGRAM_MODE=webhook needs a public URL and TELEGRAM_WEBHOOK_SECRET"
            )
        try:
            session = AiohttpSession(api=TelegramAPIServer.from_base(api_base))
            self._bot = Bot(token, session=session)
        except TokenValidationError:
            raise ConfigError("TELEGRAM_BOT_TOKEN is not a valid bot token") from None
        self._batch = PolledBatch(deliver, stopping=lambda: self._stopped)
        if mode == "polling":
            session.middleware(self._batch)
        self._api = BotCalls(bot=self._bot, token=token, pacer=pacer)
        self._files = TelegramFiles(bot=self._bot, api=self._api)
        self._deliver = deliver
        self._observe = observe  # pass group messages not for us on as context (observed)
        self._policy = policy  # bindings: groups that answer without a mention
        # 👍/👎 reactions rate answers: Telegram sends reactions only to a bot that asks for them
        self._allowed_updates = [*_ALLOWED_UPDATES, *(["message_reaction"] if votes else [])]
        self._allowed_updates.append("stopped_message_generation")  # a draft's Stop button
        self._mode = mode
        self._webhook_url = webhook_url
        self._webhook_secret = webhook_secret
        self._redaction = TokenRedaction(token)
        self._me: BotIdentity | None = None
        self._polling: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False
        router = Router(name="switchboard")
        router.message.register(self._on_message)
        router.callback_query.register(self._on_press)
        router.message_reaction.register(self._on_reaction)
        router.stopped_message_generation.register(self._on_stop)
        self._dispatcher = Dispatcher(disable_fsm=True)
        self._dispatcher.include_router(router)

    @property
    def identity(self) -> BotIdentity | None:
        """The bot's id and username, known after `start`."""
        return self._me

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def connection_name(self) -> str | None:
        """Long polling has one owner per bot (Telegram answers a second poller with 409);
        webhooks scale behind any load balancer, so they need none."""
        if self._mode == "webhook":
            return None
        return f"telegram:polling:{self._bot.id}"

    async def start(self, *, receive: bool = True) -> None:
        self._redaction.install()
        with self._api.translated("start"):
            me = await self._api.call(GetMe())
            self._me = BotIdentity(id=me.id, username=me.username or "")
            if receive and self._mode == "webhook":
                await self._api.call(
                    SetWebhook(
                        url=self._webhook_url or "",
                        secret_token=self._webhook_secret,
                        allowed_updates=self._allowed_updates,
                    )
                )
        if receive and self._mode == "webhook":
            await self._sync_menus()  # polling: whoever starts receiving does it
        if receive and self._mode == "polling":
            await self.start_receiving()
        _log.info(
            "telegram.started", mode=self._mode, bot_id=me.id, username=me.username, receive=receive
        )

    async def _sync_menus(self) -> None:
        """The "/" menus (`telegram/menus.py`); cosmetic, so a failure is logged, not raised."""
        try:
            with self._api.translated("setMyCommands"):
                await sync_menus(self._api)
        except PlatformError as exc:
            _log.warning("telegram.menu_failed", code=exc.code)

    async def start_receiving(self) -> None:
        """Start long polling (this process owns the bot's getUpdates)."""
        if self._mode == "webhook" or self._polling is not None:
            return
        with self._api.translated("deleteWebhook"):
            await self._api.call(DeleteWebhook(drop_pending_updates=False))
        await self._sync_menus()
        self._polling = asyncio.create_task(self._poll(), name="telegram:polling")
        self._polling.add_done_callback(_polling_ended)
        _log.info("telegram.polling_started")

    async def stop_receiving(self) -> None:
        """Stop long polling; sending goes on. The update being handed over finishes first,
        so its offset is confirmed only if it was taken."""
        polling, self._polling = self._polling, None
        if polling is None:
            return
        try:
            await asyncio.wait_for(self._dispatcher.stop_polling(), _STOP_TIMEOUT_S)
        except (RuntimeError, TimeoutError):
            polling.cancel()  # polling had not started yet, or would not stop
        await asyncio.wait({polling}, timeout=_STOP_TIMEOUT_S)
        try:  # not confirmed either way; taken now, they need not wait for the next poller
            await self._batch.deliver_collected()
        except Exception as exc:
            _log.warning("telegram.batch_not_taken", error=type(exc).__name__)
        _log.info("telegram.polling_stopped")

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        await self.stop_receiving()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=_STOP_TIMEOUT_S)
        await self._bot.session.close()
        self._redaction.remove()
        _log.info("telegram.stopped")

    async def _poll(self) -> None:
        # Sequential handling: the handlers collect a batch's messages; the next getUpdates,
        # whose offset confirms them, goes out only once they are in the inbox (`PolledBatch`).
        await self._dispatcher.start_polling(
            self._bot,
            handle_signals=False,
            close_bot_session=False,
            handle_as_tasks=False,
            polling_timeout=_POLL_TIMEOUT_S,
            allowed_updates=self._allowed_updates,
        )

    async def handle_webhook(self, request: Request) -> Response:
        """POST /telegram/webhook: check the secret in constant time, feed the Dispatcher."""
        given = request.headers.get(WEBHOOK_SECRET_HEADER, "").encode()
        secret = (self._webhook_secret or "").encode()
        if not secret or not hmac.compare_digest(given, secret):
            _log.warning("telegram.webhook_rejected", reason="secret")
            return Response(status_code=401)
        if self._me is None:
            return Response(status_code=503)
        try:
            data = json.loads(await request.body())
            if not isinstance(data, dict):
                raise ValueError("update is not an object")
            update = Update.model_validate(data, context={"bot": self._bot})
        except (ValueError, ValidationError):  # json and pydantic errors both subclass ValueError
            _log.warning("telegram.webhook_rejected", reason="malformed")
            return Response(status_code=400)
        try:
            await self._dispatcher.feed_update(self._bot, update)
        except SwitchboardError as exc:  # not durable: no 200, so Telegram sends it again
            _log.warning("telegram.webhook_not_taken", category=exc.category)
            return Response(status_code=503)
        return Response(status_code=200)

    # -- inbound --------------------------------------------------------------------------------

    def _place_policy(self, message: Message) -> PlacePolicy:
        """This group's binding: whether it answers without a mention (`require_mention`) and
        which other bots' messages it takes (`allow_bots`). Private chats keep the defaults."""
        if self._policy is None or message.chat.type == "private":
            return DEFAULT_POLICY
        chat, sender = str(message.chat.id), message.from_user
        user = str(sender.id) if sender is not None else ""
        return self._policy(Subject("telegram", workspace=chat, channel=chat, user=user))

    async def _on_message(self, message: Message, event_update: Update) -> None:
        me = self._me
        if me is None:
            return
        policy = self._place_policy(message)
        open_place = not policy.require_mention
        inbound = to_inbound(event_update, me, open_place=open_place, policy=policy)
        if inbound is not None:
            await self._hand_over(inbound)
            return
        observed = to_observed(event_update, me) if self._observe else None
        if observed is not None:  # Telegram shows us every group message: context for later
            await self._hand_over(observed)
            return
        if wants_text_notice(event_update, me):
            target = ReplyTarget(platform=self.platform, chat_id=str(message.chat.id))
            try:
                await self.send(target, [_plain_chunk(UNSUPPORTED_TEXT)])
            except PlatformError as exc:
                _log.warning("telegram.notice_failed", code=exc.code)

    async def _on_press(self, query: CallbackQuery, event_update: Update) -> None:
        me = self._me
        inbound = None if me is None else to_inbound(event_update, me)
        if inbound is not None:
            await self._hand_over(inbound)
            return
        _log.info("telegram.button_rejected", reason="bad_callback_data")
        try:
            with self._api.translated("answerCallbackQuery"):
                await self._api.call(
                    AnswerCallbackQuery(callback_query_id=query.id, text=STALE_BUTTON_TEXT)
                )
        except PlatformError as exc:
            _log.warning("telegram.button_answer_failed", code=exc.code)

    async def _on_reaction(self, reaction: MessageReactionUpdated, event_update: Update) -> None:
        """A 👍/👎 set or taken back on a message: a vote for the manager to place."""
        inbound = reaction_vote(event_update)
        if inbound is not None:
            await self._hand_over(inbound)

    async def _on_stop(self, stopped: MessageGenerationStopped, event_update: Update) -> None:
        """The Stop button on one of our drafts: `/stop` in that chat."""
        inbound = stop_to_inbound(event_update)
        if inbound is not None:
            await self._hand_over(inbound)

    async def _hand_over(self, inbound: InboundMessage) -> None:
        with structlog.contextvars.bound_contextvars(
            platform=str(self.platform), chat_id=inbound.chat_id, event_id=inbound.event_ids[0]
        ):
            _log.debug("message.received", button=inbound.button is not None)
            if self._mode == "webhook":
                await self._deliver(inbound)  # a failure answers the webhook with 503
            else:  # appended with its batch, before the next getUpdates confirms it
                self._batch.add(inbound)

    # -- outbound -------------------------------------------------------------------------------

    async def send(self, target: ReplyTarget, chunks: Sequence[Chunk]) -> SentRef:
        return await self._send_all(target, chunks, keyboard=None)

    async def ask(
        self, target: ReplyTarget, chunks: Sequence[Chunk], prompt: QuestionPrompt
    ) -> SentRef:
        rows = [
            [
                InlineKeyboardButton(
                    text=_label(option), callback_data=callback_data(prompt.question_id, i)
                )
            ]
            for i, option in enumerate(prompt.options)
        ]
        keyboard = InlineKeyboardMarkup(inline_keyboard=rows)
        return await self._send_all(target, chunks or [_plain_chunk("?")], keyboard=keyboard)

    def open_stream(self, target: ReplyTarget) -> ReplyStream:
        """Drafts in a private chat (user ids are positive), an edited message in groups and
        forum topics (`channels/telegram/stream.py`)."""
        if not target.chat_id.startswith("-"):
            return DraftStream(api=self._api, target=target, caps=LIMITS, send=self.send)
        return edit_stream(api=self._api, target=target, caps=LIMITS, send=self.send)

    # -- files (`FetchesFiles`, `SendsFiles`: channels/telegram/files.py) -----------------------

    max_upload_bytes = MAX_UPLOAD_BYTES

    async def fetch(self, attachment: Attachment, max_bytes: int) -> bytes:
        return await self._files.fetch(attachment, max_bytes)

    async def send_file(self, target: ReplyTarget, name: str, data: bytes, mime: str) -> SentRef:
        return await self._files.send_file(target, name, data, mime)

    async def edit(self, target: ReplyTarget, message_id: str, chunk: Chunk) -> None:
        fields: dict[str, Any] = {
            "chat_id": int(target.chat_id),
            "message_id": int(message_id),
            "reply_markup": InlineKeyboardMarkup(inline_keyboard=[]),  # drops the buttons
        }
        with self._api.translated("editMessageText"):
            try:
                await self._api.html(EditMessageText, fields, chunk, pace=target.chat_id)
            except TelegramBadRequest as exc:
                if not is_not_modified(exc):
                    raise

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        done = asyncio.Event()
        task = asyncio.create_task(self._keep_typing(target, done), name="telegram:typing")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            yield
        finally:
            done.set()
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)

    async def acknowledge(self, msg: InboundMessage, kind: AckKind) -> None:
        emoji = _REACTIONS.get(kind)
        if emoji is None or msg.button is not None:
            return
        try:
            with self._api.translated("setMessageReaction"):
                await self._api.call(
                    SetMessageReaction(
                        chat_id=int(msg.chat_id),
                        message_id=int(msg.provider_message_id),
                        reaction=[ReactionTypeEmoji(emoji=emoji)],
                    )
                )
            return
        except PlatformError as exc:
            _log.info("telegram.reaction_failed", code=exc.code)
        if kind is not AckKind.QUEUED:  # only a promise to answer later is worth a message
            return
        target = replace(msg.target, reply_to_id=msg.provider_message_id)
        await self.send(target, [_plain_chunk(QUEUED_TEXT)])

    async def notify(self, msg: InboundMessage, text: str, *, private: bool = False) -> bool:
        """A private notice from a group goes to the sender's private chat, and nowhere else:
        a bot may not start one (403 until the person opens it, or after they block the bot;
        400 when Telegram knows no such chat), so then the group hears only how to open it. A
        network or server failure is raised: the message may have arrived."""
        chunk = _plain_chunk(text)
        if not private or msg.is_dm:
            await self.send(msg.target, [chunk])
            return True
        try:
            await self.send(ReplyTarget(platform=self.platform, chat_id=msg.sender_id), [chunk])
        except PlatformError as exc:
            if exc.code not in _UNDELIVERED:
                raise
            _log.info("telegram.private_notice_undelivered", code=exc.code)
            target = replace(msg.target, reply_to_id=msg.provider_message_id or None)
            await self.send(target, [self._undelivered(msg)])
            return False
        return True

    def _undelivered(self, msg: InboundMessage) -> Chunk:
        """`private_undelivered_text` naming the sender (a link to them, not a ping by
        @username) and the private chat to open."""
        name = msg.sender_name or "there"
        me = self._me.username if self._me is not None else ""
        how = f"open a chat with me (t.me/{me}) and press Start" if me else "start a chat with me"
        mention = f'<a href="tg://user?id={int(msg.sender_id)}">{html.escape(name)}</a>'
        return Chunk(
            text=private_undelivered_text(mention, html.escape(how, quote=False)),
            plain=private_undelivered_text(name, how),
        )

    async def answer_button(self, msg: InboundMessage, notice: str | None) -> None:
        if msg.button is None or not msg.button.interaction_id:
            return
        method = AnswerCallbackQuery(
            callback_query_id=msg.button.interaction_id,
            text=notice,
            show_alert=notice is not None,
        )
        try:
            with self._api.translated("answerCallbackQuery"):
                await self._api.call(method)
        except PlatformError as exc:
            if exc.code != 400:  # 400: the query is too old to answer; nothing is lost
                raise
            _log.info("telegram.button_answer_failed", code=exc.code)

    async def is_workspace_admin(self, msg: InboundMessage) -> bool:
        if msg.is_dm:
            return True  # a private chat is the sender's own
        with self._api.translated("getChatMember"):
            member = await self._api.call(
                GetChatMember(chat_id=int(msg.chat_id), user_id=int(msg.sender_id))
            )
        return str(member.status) in _ADMIN_STATUSES

    # -- plumbing -------------------------------------------------------------------------------

    async def _send_all(
        self, target: ReplyTarget, chunks: Sequence[Chunk], *, keyboard: InlineKeyboardMarkup | None
    ) -> SentRef:
        ids: list[str] = []
        with self._api.translated("sendMessage"):
            for i, chunk in enumerate(chunks):
                fields: dict[str, Any] = {"chat_id": int(target.chat_id)}
                if target.is_topic and target.thread_anchor:
                    fields["message_thread_id"] = int(target.thread_anchor)
                if i == 0 and target.reply_to_id:
                    fields["reply_parameters"] = ReplyParameters(
                        message_id=int(target.reply_to_id), allow_sending_without_reply=True
                    )
                if keyboard is not None and i == len(chunks) - 1:
                    fields["reply_markup"] = keyboard
                sent = await self._api.html(SendMessage, fields, chunk, pace=target.chat_id)
                ids.append(str(sent.message_id))
        return SentRef(chat_id=target.chat_id, message_ids=tuple(ids))

    async def _keep_typing(self, target: ReplyTarget, done: asyncio.Event) -> None:
        """Until `done`, not only until cancelled: Python 3.11 drops a cancellation that lands
        as an awaited `asyncio.wait_for` completes (CPython gh-86296), and a typing loop that
        lived on would show "typing…" in the chat for good."""
        fields: dict[str, Any] = {"chat_id": int(target.chat_id), "action": "typing"}
        if target.is_topic and target.thread_anchor:
            fields["message_thread_id"] = int(target.thread_anchor)
        while not done.is_set():
            try:
                await self._api.bot(SendChatAction(**fields))
            except AiogramError as exc:  # typing is cosmetic; never let it break a turn
                _log.debug("telegram.typing_failed", error=type(exc).__name__)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_TYPING_EVERY_S):
                    await done.wait()


def _plain_chunk(text: str) -> Chunk:
    return Chunk(text=html.escape(text, quote=False), plain=text)


def _label(option: str) -> str:
    """A button caption; Telegram clips or rejects long ones, so we clip first."""
    return option if len(option) <= _MAX_LABEL else option[: _MAX_LABEL - 1] + "…"


def _polling_ended(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        # the type only: aiogram messages may quote request URLs, which carry the token
        _log.error("telegram.polling_failed", error=type(task.exception()).__name__)
