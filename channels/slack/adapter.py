"""The Slack adapter: one slack-bolt `AsyncApp` fed by Socket Mode or the Events API.

Both transports end in the same `AsyncApp.async_dispatch`: Socket Mode through bolt's socket-mode
handler (a tracked task started by `start()`), the Events API through `handle_webhook`, which the
service mounts at `POST /slack/events` (it checks the signature and the body's shape first, since
bolt answers 500 to a body it cannot parse). Bolt verifies signatures, answers `url_verification`
and, with `process_before_response=True`, acks after our listener returns; the listener only turns
the payload into an `InboundMessage` (pure functions in `slack/events.py`) and appends it to the
inbox (`deliver`), so an event is acknowledged only once it is durable.
Retried deliveries carry the same `event_id` and the same channel + ts, so the manager's dedupe
answers each message once, including the `message` twin of an `app_mention`.

Our slash command (`command`, `/switchboard` by default) arrives the same two ways (HTTP at
`POST /slack/commands`, signature checked like events); it is delivered as a native command and
acked once durable, and its answers go to its `response_url` (ephemeral where the registry says
the answer is the sender's alone), falling back to `chat.postEphemeral` / a post when that URL
is spent.

Replies arrive rendered as mrkdwn and chunked to `LIMITS.max_len`. Every message, edit, stream
call and notice first waits on the channel's send budget (`slack/pacing.py`: this process's, or
the fleet's in Redis when the service passes a shared `pacer`); a 429 that still happens is
retried by slack-sdk's rate-limit handler, which sleeps for `Retry-After`. A connection error is
retried only for calls that are safe to repeat (`slack/retries.py`): a lost response to a post
must not become a second message. slack-sdk errors become `switchboard.errors` here and nowhere
else.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import aiohttp
import structlog
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.internals import parse_body
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.webhook.async_client import AsyncWebhookClient
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.adapter import (
    AckKind,
    Capabilities,
    Chunk,
    Deliver,
    HistoryRequest,
    HomeView,
    Markup,
    QuestionPrompt,
    ReplyStream,
    SentRef,
)
from channels.bindings import PolicyFor
from channels.commands import DEFAULT_SLACK_COMMAND
from channels.message import Attachment, InboundMessage, NativeCommand, Platform, ReplyTarget
from channels.names import Names
from channels.send_budget import LocalPacer, Pacer
from channels.slack.assistant import DEFAULT_PROMPTS, THINKING, AssistantSurfaces, Prompt
from channels.slack.blocks import home_blocks, question_blocks
from channels.slack.events import (
    BUTTON_PREFIX,
    FEEDBACK_ACTION,
    STOP_ACTION,
    BotIdentity,
    home_request,
    is_for_bot,
    parse_button_value,
    slash_to_inbound,
    stop_press,
    to_inbound,
)
from channels.slack.files import MAX_UPLOAD_BYTES, SlackFiles
from channels.slack.history import SlackHistory
from channels.slack.pacing import SEND_LIMITS, SlackLimits, SlackPacing
from channels.slack.retries import retry_handlers
from channels.slack.sessions import AgentSessions, session_stop
from channels.slack.stream import Refusals, SlackStream, chunk_blocks
from switchboard.conversation import ContextMessage
from switchboard.errors import ConfigError, PlatformAuthError, PlatformError, PlatformRateLimited

__all__ = [
    "DEFAULT_API_BASE",
    "LIMITS",
    "BotIdentity",
    "SlackAdapter",
    "is_for_bot",
    "parse_button_value",
    "question_blocks",
    "to_inbound",
]

_log = structlog.get_logger(__name__)

DEFAULT_API_BASE = "https://slack.com/api/"
LIMITS = Capabilities(
    max_len=4000,
    len_unit="chars",
    markup=Markup.SLACK_MRKDWN,
    can_edit=True,
    buttons=True,
    reactions=True,
    votes="buttons",
)

_STOP_REFUSED = "Only the person who asked, or a workspace admin, can stop this answer."
_ACK_REACTIONS = {
    AckKind.RECEIVED: "eyes",
    AckKind.QUEUED: "hourglass_flowing_sand",
    AckKind.STEERED: "writing_hand",
}
_AUTH_ERRORS = frozenset(
    {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}
)
_API_TIMEOUT_S = 15
_READ_TIMEOUT_S = 8.0  # a context read taking longer is given up on; the turn goes on
_PLATFORM = str(Platform.SLACK)


class SlackAdapter:
    """Satisfies `channels.base.Adapter` for Slack. Socket Mode when `app_token` is given, the
    Events API (`handle_webhook`) when `signing_secret` is; both may be set. Sends wait on
    `pacer` (default: this process's windows) for the budgets `send_limits` sets."""

    platform = Platform.SLACK
    capabilities = LIMITS

    def __init__(
        self,
        *,
        bot_token: str,
        deliver: Deliver,
        app_token: str | None = None,
        signing_secret: str | None = None,
        api_base: str = DEFAULT_API_BASE,
        pacer: Pacer | None = None,
        send_limits: SlackLimits = SEND_LIMITS,
        read_timeout_s: float = _READ_TIMEOUT_S,
        command: str = DEFAULT_SLACK_COMMAND,
        prompts: Sequence[Prompt] = DEFAULT_PROMPTS,
        policy: PolicyFor | None = None,
    ) -> None:
        if not bot_token:
            raise ConfigError("SLACK_BOT_TOKEN is empty")
        if not (app_token or signing_secret):
            raise ConfigError("Slack needs SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET")
        self._deliver = deliver
        self._app_token = app_token
        self._pacing = SlackPacing(pacer or LocalPacer(), send_limits)
        self._verifier = SignatureVerifier(signing_secret) if signing_secret else None
        self._client = AsyncWebClient(
            token=bot_token,
            base_url=api_base if api_base.endswith("/") else api_base + "/",
            timeout=_API_TIMEOUT_S,
            retry_handlers=retry_handlers(rate_limit_retries=3),
        )
        # Context reads give up on a 429 instead of sleeping through it (`slack/history.py`).
        self._reader = AsyncWebClient(
            token=bot_token,
            base_url=self._client.base_url,
            timeout=_API_TIMEOUT_S,
            retry_handlers=retry_handlers(rate_limit_retries=0),
        )
        self._read_timeout_s = read_timeout_s
        self._names = Names()
        self._assistant = AssistantSurfaces(client=self._client, api=self._api, prompts=prompts)
        self._sessions = AgentSessions(client=self._client, api=self._api)
        self._app = AsyncApp(
            client=self._client,
            # An empty string stops bolt from reading SLACK_SIGNING_SECRET behind our back.
            signing_secret=signing_secret or "",
            request_verification_enabled=bool(signing_secret),
            # Our listener only appends to the inbox, so it runs before the ack: an event that
            # was not made durable is not acknowledged (HTTP 500, no Socket Mode ack) and
            # Slack redelivers it.
            process_before_response=True,
            ssl_check_enabled=bool(signing_secret),
            name="switchboard",
        )
        self._app.use(_answer_rate_limited)
        self._app.event("assistant_thread_started")(self._on_thread_started)
        self._app.event("app_home_opened")(self._on_home_opened)
        self._app.event("agent_session_stopped")(self._on_session_stopped)
        self._app.event("app_mention")(self._on_event)
        self._app.event("message")(self._on_event)
        self._app.action(re.compile("^" + re.escape(BUTTON_PREFIX)))(self._on_action)
        self._app.action(FEEDBACK_ACTION)(self._on_action)
        self._app.action(STOP_ACTION)(self._on_stop)
        self._command = "/" + command.lstrip("/")
        self._policy = policy  # bindings: channels that answer without a mention
        self._app.command(self._command)(self._on_command)
        # Bolt answers 404 (Events API) or never acks (Socket Mode) what no listener matches, so
        # Slack retries, shows the user an error and may disable the subscription. These
        # catch-alls come last (bolt runs the first match): ack and drop what is not ours.
        anything = re.compile(".*")
        for register in (
            self._app.event,
            self._app.action,
            self._app.shortcut,
            self._app.view,
            self._app.options,
            self._app.command,
        ):
            register(anything)(self._ack_only)
        self._http = AsyncSlackRequestHandler(self._app)
        self._socket: AsyncSocketModeHandler | None = None
        self._connect_task: asyncio.Task[None] | None = None
        self._me: BotIdentity | None = None
        self._me_lock = asyncio.Lock()
        self._stopped = False
        self._stream_refusals = Refusals()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, *, receive: bool = True) -> None:
        """Learn who we are (`auth.test`), then connect Socket Mode in a tracked task.

        The first Socket Mode URL is fetched here, so a refused app token fails start-up
        instead of leaving slack-sdk's connect loop retrying in the background forever."""
        me = await self._identity()
        if receive and self._app_token and self._socket is None:
            opened = await self._api(self._client.apps_connections_open(app_token=self._app_token))
            self._socket = AsyncSocketModeHandler(
                self._app, app_token=self._app_token, web_client=self._client
            )
            self._socket.client.wss_uri = str(opened["url"])
            self._connect_task = asyncio.create_task(
                self._socket.connect_async(),
                name="slack:socket-mode",
            )
        _log.info(
            "slack.started",
            team_id=me.team_id,
            bot_user_id=me.user_id,
            socket_mode=self._socket is not None,
            events_api=self._verifier is not None,
        )

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._connect_task is not None and not self._connect_task.done():
            self._connect_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._connect_task
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close_async()
        _log.info("slack.stopped")

    # -- inbound -----------------------------------------------------------------------------

    async def handle_webhook(self, request: Request) -> Response:
        """The Events API endpoint (`POST /slack/events`): 401 for a bad or stale signature,
        400 for a body that is not a Slack payload, otherwise bolt's answer (an immediate ack,
        or the `url_verification` challenge)."""
        if self._verifier is None:
            return JSONResponse({"error": "events API not enabled"}, status_code=404)
        body = await request.body()
        if not _signed(self._verifier, body, request.headers):
            _log.info("slack.webhook_rejected", reason="signature")
            return JSONResponse({"error": "invalid request"}, status_code=401)
        if not _well_formed(body, request.headers.get("content-type")):
            _log.info("slack.webhook_rejected", reason="malformed")
            return JSONResponse({"error": "malformed body"}, status_code=400)
        return await self._http.handle(request)

    async def _on_event(self, body: dict[str, Any]) -> None:
        msg = to_inbound(body, await self._identity(), policy=self._policy)
        if msg is None:
            return
        structlog.contextvars.bind_contextvars(
            platform=_PLATFORM, chat_id=msg.chat_id, event_id=body.get("event_id")
        )
        _log.debug("slack.event_received", kind=(body.get("event") or {}).get("type"))
        await self._deliver(msg)

    async def _on_thread_started(self, body: dict[str, Any]) -> None:
        """A user opened an assistant thread: greet them with the suggested prompts."""
        await self._assistant.thread_started(body.get("event") or {})

    async def _on_home_opened(self, body: dict[str, Any]) -> None:
        """The app's messages tab (the agent view) greets with the suggested prompts; its Home
        tab is a request for the person's home page, which a worker publishes (it needs their
        link state and usage): not acknowledged until it is in the inbox."""
        event = body.get("event") or {}
        if event.get("tab") == "messages":
            await self._assistant.home_opened(event)
            return
        msg = home_request(body, await self._identity())
        if msg is not None:
            await self._deliver(msg)

    async def publish_home(self, msg: InboundMessage, home: HomeView) -> None:
        """`views.publish` of the person's App Home (`PublishesHome`)."""
        await self._api(self._client.views_publish(user_id=msg.sender_id, view=home_blocks(home)))

    async def _on_session_stopped(self, body: dict[str, Any]) -> None:
        """Slack's own Stop on an agent session: that person's `/stop` in the thread."""
        msg = session_stop(body, (await self._identity()).team_id)
        if msg is not None:
            structlog.contextvars.bind_contextvars(platform=_PLATFORM, chat_id=msg.chat_id)
            _log.info("stop.pressed", allowed=True, native=True)
            await self._deliver(msg)

    async def _on_action(self, ack: Any, body: dict[str, Any]) -> None:
        msg = to_inbound(body, await self._identity())
        if msg is not None:
            structlog.contextvars.bind_contextvars(platform=_PLATFORM, chat_id=msg.chat_id)
            _log.debug("slack.button_pressed")
            await self._deliver(msg)  # not taken: no ack, and Slack tells the presser
        await ack()

    async def _on_stop(self, ack: Any, body: dict[str, Any]) -> None:
        """The Stop button under a reply being written: the asker's (or a workspace admin's)
        press is their `/stop` in that conversation; anyone else is told, only them."""
        pressed = stop_press(body, await self._identity())
        if pressed is not None:
            msg, asker = pressed
            structlog.contextvars.bind_contextvars(platform=_PLATFORM, chat_id=msg.chat_id)
            allowed = msg.sender_id == asker or await self._admin_or_false(msg)
            _log.info("stop.pressed", allowed=allowed)
            if allowed:
                await self._deliver(msg)  # not taken: no ack, and Slack tells the presser
            else:
                await self._refuse_stop(msg)
        await ack()

    async def _admin_or_false(self, msg: InboundMessage) -> bool:
        try:
            return await self.is_workspace_admin(msg)
        except PlatformError as exc:
            _log.warning("slack.admin_check_failed", code=exc.code)
            return False

    async def _refuse_stop(self, msg: InboundMessage) -> None:
        try:
            await self._ephemeral(msg, _escape(_STOP_REFUSED))
        except PlatformError as exc:
            _log.warning("slack.stop_refusal_failed", code=exc.code)

    async def _on_command(self, ack: Any, body: dict[str, Any]) -> None:
        """Our slash command: acked (with nothing to show yet) once it is in the inbox; not
        taken, it is not acked and Slack tells the user it failed."""
        msg = slash_to_inbound(body, await self._identity(), command=self._command)
        if msg is not None:
            structlog.contextvars.bind_contextvars(
                platform=_PLATFORM, chat_id=msg.chat_id, event_id=msg.provider_message_id
            )
            _log.info("slack.command_received", command=msg.native.name if msg.native else None)
            await self._deliver(msg)
        await ack()

    async def _ack_only(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        kind = body.get("type") or body.get("command")
        if kind == "event_callback":
            kind = (body.get("event") or {}).get("type")
        _log.debug("slack.ignored", kind=kind)

    async def _identity(self) -> BotIdentity:
        async with self._me_lock:
            if self._me is None:
                resp = await self._api(self._client.auth_test())
                self._me = BotIdentity(
                    user_id=str(resp.get("user_id") or ""),
                    bot_id=str(resp.get("bot_id") or ""),
                    team_id=str(resp.get("team_id") or ""),
                    name=str(resp.get("user") or ""),
                )
            return self._me

    # -- outbound ----------------------------------------------------------------------------

    async def send(self, target: ReplyTarget, chunks: Sequence[Chunk]) -> SentRef:
        ids = [await self._post(target, c.text, blocks=chunk_blocks(c)) for c in chunks]
        await self._sessions.settled(target)
        return SentRef(target.chat_id, tuple(ids))

    async def ask(
        self, target: ReplyTarget, chunks: Sequence[Chunk], prompt: QuestionPrompt
    ) -> SentRef:
        *first, last = chunks or [Chunk(text="", plain="")]
        ids = [await self._post(target, chunk.text) for chunk in first]
        fallback = last.text or "Choose an option:"
        ids.append(await self._post(target, fallback, blocks=question_blocks(last.text, prompt)))
        await self._sessions.settled(target)  # waiting on the person now, not working
        return SentRef(target.chat_id, tuple(ids))

    def open_stream(self, target: ReplyTarget, *, recipient_id: str | None = None) -> ReplyStream:
        """Slack's streaming API in the reply thread, or posted-and-edited messages where it
        is refused (`channels/slack/stream.py`). Outside DMs Slack wants the recipient: the
        target's `recipient_id` (the sender), unless given here; without one channels fall
        back to edits."""
        return SlackStream(
            client=self._client,
            api=self._api,
            post=self._post,
            pacing=self._pacing,
            target=target,
            caps=LIMITS,
            refusals=self._stream_refusals,
            recipient_id=recipient_id or target.recipient_id or None,
            working=self._assistant.working,
            settled=self._sessions.settled,
        )

    # -- files (`FetchesFiles`, `DescribesFiles`, `SendsFiles`: channels/slack/files.py) -------

    max_upload_bytes = MAX_UPLOAD_BYTES

    async def fetch(self, attachment: Attachment, max_bytes: int) -> bytes:
        files = SlackFiles(client=self._client, call=self._api, pacing=self._pacing)
        return await files.fetch(attachment, max_bytes)

    async def describe(self, attachment: Attachment) -> Attachment:
        files = SlackFiles(client=self._client, call=self._api, pacing=self._pacing)
        return await files.describe(attachment)

    async def send_file(self, target: ReplyTarget, name: str, data: bytes, mime: str) -> SentRef:
        files = SlackFiles(client=self._client, call=self._api, pacing=self._pacing)
        return await files.send_file(target, name, data, mime)

    # -- context (`ReadsHistory`: channels/slack/history.py) -----------------------------------

    async def read_history(self, request: HistoryRequest) -> list[ContextMessage]:
        history = SlackHistory(
            client=self._reader,
            call=self._api,
            pacing=self._pacing,
            me=await self._identity(),
            names=self._names,
        )
        try:
            async with asyncio.timeout(self._read_timeout_s):
                return await history.read(request)
        except TimeoutError:
            raise PlatformError(
                "Slack history read timed out", platform=_PLATFORM, code="timeout"
            ) from None

    async def edit(self, target: ReplyTarget, message_id: str, chunk: Chunk) -> None:
        await self._pacing.update(target.chat_id, target.workspace_id)
        await self._api(
            self._client.chat_update(
                channel=target.chat_id, ts=message_id, text=chunk.text, blocks=[]
            )
        )

    async def acknowledge(self, msg: InboundMessage, kind: AckKind) -> None:
        """A reaction on the sender's message. Best effort: a missing emoji must never cost the
        reply, so failures are logged, not raised."""
        if msg.button is not None:
            return
        if kind is AckKind.RECEIVED and await self._sessions.working(msg):
            return  # the agent session's working state (and Stop button) replaces 👀
        if kind is AckKind.RECEIVED and await self._assistant.working(msg.target, THINKING):
            await self._assistant.title_once(msg.target, msg.text)  # the status replaces 👀
            return
        try:
            await self._api(
                self._client.reactions_add(
                    channel=msg.chat_id,
                    timestamp=msg.provider_message_id,
                    name=_ACK_REACTIONS[kind],
                )
            )
        except PlatformError as exc:
            if exc.code != "already_reacted":
                _log.warning("slack.reaction_failed", code=exc.code, kind=str(kind))

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        """Slack has no typing indicator for bots: the Web API offers none, and
        `assistant.threads.setStatus` only works in Agents & Assistants threads (other channels
        reject it). The 👀 reaction on receipt is the "working on it" signal instead."""
        yield

    async def notify(self, msg: InboundMessage, text: str, *, private: bool = False) -> bool:
        """A private notice is ephemeral (only the sender sees it); one Slack refuses is
        raised, never posted for the channel to see."""
        safe = _escape(text)
        native = msg.native
        if (
            native is not None
            and native.response_url
            and await self._respond(native, safe, private=private or native.private)
        ):
            return True
        if private and not msg.is_dm:
            await self._ephemeral(msg, safe)
            return True
        await self._post(msg.target, safe)
        return True

    async def answer_button(self, msg: InboundMessage, notice: str | None) -> None:
        """Bolt already acked the press; only a notice (shown to the presser alone) is left."""
        if notice:
            await self._ephemeral(msg, _escape(notice))

    async def is_workspace_admin(self, msg: InboundMessage) -> bool:
        resp = await self._api(self._client.users_info(user=msg.sender_id))
        user = resp.get("user") or {}
        return any(bool(user.get(k)) for k in ("is_admin", "is_owner", "is_primary_owner"))

    # -- Web API -----------------------------------------------------------------------------

    async def _post(
        self, target: ReplyTarget, text: str, *, blocks: list[dict[str, Any]] | None = None
    ) -> str:
        await self._pacing.post(target.chat_id)
        resp = await self._api(
            self._client.chat_postMessage(
                channel=target.chat_id,
                text=text,
                blocks=blocks,
                thread_ts=target.thread_anchor,
                unfurl_links=False,
                unfurl_media=False,
            )
        )
        return str(resp.get("ts") or "")

    async def _respond(self, native: NativeCommand, text: str, *, private: bool) -> bool:
        """Answer a slash command through its response_url (ephemeral: only the sender sees
        it). False when the URL is spent (30 minutes, 5 answers) or unreachable; never resent,
        since a lost reply may have been shown."""
        hook = AsyncWebhookClient(native.response_url, timeout=_API_TIMEOUT_S, retry_handlers=[])
        kind = "ephemeral" if private else "in_channel"
        try:
            resp = await hook.send_dict({"response_type": kind, "text": text})
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            _log.warning("slack.response_url_failed", error=type(exc).__name__)
            return False
        if resp.status_code != 200:
            _log.warning("slack.response_url_refused", status=resp.status_code, body=resp.body[:40])
            return False
        return True

    async def _ephemeral(self, msg: InboundMessage, text: str) -> None:
        await self._pacing.post(msg.chat_id)
        await self._api(
            self._client.chat_postEphemeral(
                channel=msg.chat_id, user=msg.sender_id, text=text, thread_ts=msg.thread_anchor
            )
        )

    async def _api(self, call: Awaitable[AsyncSlackResponse]) -> AsyncSlackResponse:
        """Await one Web API call, translating slack-sdk and transport errors."""
        try:
            return await call
        except SlackApiError as exc:
            raise _translate(exc) from exc
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            raise PlatformError(
                f"Slack unreachable: {type(exc).__name__}", platform=_PLATFORM, code="network"
            ) from exc


async def _answer_rate_limited(
    body: dict[str, Any], next: Callable[[], Awaitable[None]]
) -> BoltResponse | None:
    """Bolt middleware for Slack's `app_rate_limited` notice (Events API: the app went past
    30,000 deliveries per workspace in an hour and Slack is holding events back). It is not an
    event callback, so no listener matches and bolt would answer 404, which Slack counts toward
    the 5% failures that disable the subscription: it is answered 200 and the operator warned."""
    if body.get("type") != "app_rate_limited":
        await next()
        return None
    _log.warning(
        "slack.app_rate_limited",
        team_id=body.get("team_id"),
        api_app_id=body.get("api_app_id"),
        minute_rate_limited=body.get("minute_rate_limited"),
    )
    return BoltResponse(status=200, body="")


def _escape(text: str) -> str:
    """Plain text → mrkdwn that Slack shows literally (its only three escapes)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _signed(verifier: SignatureVerifier, body: bytes, headers: Mapping[str, str]) -> bool:
    """Slack's HMAC check; a garbled timestamp or non-UTF-8 body is a bad signature too."""
    try:
        return verifier.is_valid_request(body, dict(headers))
    except (UnicodeDecodeError, ValueError):
        return False


def _well_formed(body: bytes, content_type: str | None) -> bool:
    """Whether bolt can parse the body into a payload object (it would raise, giving a 500)."""
    try:
        payload = parse_body(body.decode("utf-8"), (content_type or "").split(";")[0].strip())
    except (UnicodeDecodeError, ValueError):
        return False
    if not isinstance(payload, Mapping) or not payload:
        return False
    event = payload.get("event")
    return event is None or isinstance(event, Mapping)


def _translate(exc: SlackApiError) -> PlatformError:
    resp = exc.response
    code = str(resp.get("error") or resp.status_code) if resp is not None else "unknown"
    if resp is not None and (resp.status_code == 429 or code == "ratelimited"):
        retry_after = _retry_after(resp.headers)
        return PlatformRateLimited(
            "Slack rate limit", platform=_PLATFORM, retry_after=retry_after, code=429
        )
    if code in _AUTH_ERRORS:
        return PlatformAuthError(f"Slack refused the token: {code}", platform=_PLATFORM, code=code)
    return PlatformError(f"Slack API error: {code}", platform=_PLATFORM, code=code)


def _retry_after(headers: Mapping[str, Any]) -> float:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            raw = value[0] if isinstance(value, list | tuple) else value
            with contextlib.suppress(TypeError, ValueError):
                return float(raw)
    return 1.0
