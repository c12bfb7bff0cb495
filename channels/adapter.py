"""The one adapter interface every platform implements, and the data the manager hands it.

The manager branches on `Capabilities`, never on adapter classes. Adapters import neither
`agent` nor `storage`: they turn platform events into `InboundMessage`s, pass them to `deliver`,
and send what the manager rendered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

import structlog

from channels.message import Attachment, InboundMessage, Platform, ReplyTarget
from switchboard.conversation import ContextMessage
from switchboard.errors import SwitchboardError

_log = structlog.get_logger(__name__)

__all__ = [
    "HOME_REQUEST",
    "UNSUPPORTED_TEXT",
    "AckKind",
    "Adapter",
    "Capabilities",
    "Chunk",
    "Deliver",
    "DescribesFiles",
    "ExclusiveReceiver",
    "FetchesFiles",
    "HistoryRequest",
    "HomeView",
    "Markup",
    "PublishesHome",
    "QuestionPrompt",
    "ReadsHistory",
    "ReplyStream",
    "ReportsHealth",
    "SendsFiles",
    "SentRef",
    "ShowsWorking",
    "Streams",
    "deliver_until_taken",
    "private_undelivered_text",
]

UNSUPPORTED_TEXT = "I can only read text for now."
"""The answer to a message with nothing readable in it (a sticker alone), wherever it is caught."""


def private_undelivered_text(who: str, how: str) -> str:
    """What the conversation hears instead of a private notice that could not reach `who`
    (a mention or name): `how` they let the bot reach them; never the notice itself."""
    return f"{who}, I couldn't message you privately: {how}, then ask me here again."


Deliver = Callable[[InboundMessage], Awaitable[None]]
"""What an adapter calls for every inbound message, before it acknowledges the platform: returns
once the message is durable (the inbox), quickly, so no ack deadline is held up; raises when it
is not, and then the adapter must not acknowledge (webhook 5xx, no Socket Mode ack, no polling
offset), so the platform redelivers."""


class Markup(StrEnum):
    SLACK_MRKDWN = "slack"
    TELEGRAM_HTML = "telegram_html"
    DISCORD_MARKDOWN = "discord"
    PLAIN = "plain"


class AckKind(StrEnum):
    RECEIVED = "received"  # the message was accepted (Slack's 👀 on receipt)
    QUEUED = "queued"  # the thread is busy; the message waits for the next turn
    STEERED = "steered"  # the message joined the answer being written (`busy=steer`)


@dataclass(frozen=True, slots=True)
class Capabilities:
    max_len: int
    len_unit: Literal["chars", "utf16"]
    markup: Markup
    can_edit: bool = True
    buttons: bool = True
    reactions: bool = True
    votes: Literal["buttons", "reactions", "none"] = "none"  # how an answer is rated here


@dataclass(frozen=True, slots=True)
class Chunk:
    """One platform message: `text` in the platform's markup, `plain` the same words unformatted
    (Telegram falls back to it when the server rejects the entities). With `vote_run`, an
    adapter whose votes are buttons puts its 👍/👎 under this message; with `stop_for`, an
    adapter that can puts a Stop button under a reply still being written."""

    text: str
    plain: str
    vote_run: str = ""  # the last chunk of a final answer that can be rated: its run id
    stop_for: str = ""  # a reply still being written: who may press its Stop button (the asker)


@dataclass(frozen=True, slots=True)
class QuestionPrompt:
    """A clarification question to show with one button per option."""

    question_id: str
    options: tuple[str, ...]
    asker_id: str


@dataclass(frozen=True, slots=True)
class SentRef:
    """Ids of the platform messages a send produced, oldest first."""

    chat_id: str
    message_ids: tuple[str, ...]


@runtime_checkable
class Adapter(Protocol):
    platform: Platform
    capabilities: Capabilities

    async def start(self, *, receive: bool = True) -> None:
        """Get ready to send and, with `receive`, connect (gateway, socket, polling, webhook
        registration) and begin delivering messages. `receive=False` is a worker's adapter."""

    async def stop(self) -> None:
        """Stop receiving and close connections; idempotent."""

    async def send(self, target: ReplyTarget, chunks: Sequence[Chunk]) -> SentRef:
        """Send rendered chunks, in order, into the target's thread."""

    async def ask(
        self, target: ReplyTarget, chunks: Sequence[Chunk], prompt: QuestionPrompt
    ) -> SentRef:
        """Send a question; the last message carries one button per option."""

    async def edit(self, target: ReplyTarget, message_id: str, chunk: Chunk) -> None:
        """Replace a message's text (and drop its buttons), e.g. to show a question's answer."""

    async def acknowledge(self, msg: InboundMessage, kind: AckKind) -> None:
        """A reaction (or a short notice where reactions fail) telling the sender we saw it."""

    def typing(self, target: ReplyTarget) -> AbstractAsyncContextManager[None]:
        """Show 'typing…' (refreshed) for as long as the context is open."""

    async def notify(self, msg: InboundMessage, text: str, *, private: bool = False) -> bool:
        """A short plain notice to the sender; `private` = ephemeral or DM where the platform can.
        A private notice is never posted where others see it: when the platform refuses to
        deliver it privately (DMs closed or never opened), the conversation gets only
        `private_undelivered_text` and the answer is False; True once it was shown as asked."""

    async def answer_button(self, msg: InboundMessage, notice: str | None) -> None:
        """Close the press on the platform side (callback answer / interaction response);
        `notice` is shown only to the presser."""

    async def is_workspace_admin(self, msg: InboundMessage) -> bool:
        """Whether the sender administers the workspace (for `/link`)."""


class ReplyStream(Protocol):
    """One reply shown while the model writes it (Telegram drafts or edits, Slack's streaming
    API, Discord edits, the console's tokens), then settled on the final rendered text.

    The manager calls `update` with the whole text so far, as often as tokens arrive; the stream
    renders it safely (a half-written code fence or bold is never a parse error) and shows it no
    faster than the platform allows, always ending on the latest text. Exactly one of `finish`
    and `cancel` ends it."""

    async def update(self, text: str) -> None:
        """The reply so far (markdown, as the model writes it); cheap when nothing is due."""

    async def status(self, line: str) -> None:
        """A short status (e.g. "Using current_time…") shown until text replaces it."""

    async def finish(self, chunks: Sequence[Chunk]) -> SentRef:
        """Settle on the final reply, exactly the chunks the non-streaming path would send
        (the streamed message becomes the first chunk; the rest follow as new messages).
        Returns every message id the final reply occupies."""

    async def cancel(self, note: str | None = None) -> SentRef | None:
        """End without a final reply: with `note` (e.g. "(stopped)"), keep what was shown and
        append it; without, take back what was shown (a draft, a partial message), e.g. before
        a clarification question is sent whole."""


HOME_REQUEST = "home"
"""`NativeCommand.name` of a request for a person's App Home (Slack's Home tab was opened):
the manager answers it with `PublishesHome.publish_home`, never in a conversation."""


@dataclass(frozen=True, slots=True)
class HomeView:
    """What an App Home shows one person: what the bot does, their link state, their usage
    (percent of their limits, never amounts), and the commands."""

    about: str
    link: str
    usage: str
    commands: tuple[str, ...]


@runtime_checkable
class PublishesHome(Protocol):
    """An adapter with a per-person home page (Slack's App Home tab)."""

    async def publish_home(self, msg: InboundMessage, home: HomeView) -> None:
        """Show `home` to the sender of `msg` (a `HOME_REQUEST`)."""


@runtime_checkable
class ShowsWorking(Protocol):
    """A stream that can also show a status line outside the reply, at once and at no send
    cost (Slack's assistant status, "Using <tool>…"): tool steps are shown there as they
    start, not only once a streamed reply is due; the platform clears it with the reply."""

    async def working(self, line: str) -> None:
        """Show `line` as the conversation's working status; best effort."""


@runtime_checkable
class Streams(Protocol):
    """An adapter that can show a reply while it is written."""

    def open_stream(self, target: ReplyTarget) -> ReplyStream:
        """A stream into the target's conversation; nothing is sent until the first update."""


@runtime_checkable
class FetchesFiles(Protocol):
    """An adapter that can read the files its messages reference (`InboundMessage.attachments`).

    The inbox carries references only; a worker fetches the bytes at turn time, once. `fetch`
    raises `FileTooLarge` before downloading when the platform reported a size over `max_bytes`,
    and while streaming when it did not (no file is ever buffered past the cap); any other
    failure is a `PlatformError` whose text names no token or signed URL."""

    async def fetch(self, attachment: Attachment, max_bytes: int) -> bytes:
        """The file's bytes, at most `max_bytes` of them."""


@runtime_checkable
class DescribesFiles(Protocol):
    """An adapter whose messages may name a file by id alone (a Slack Connect file arrives as
    `{"id", "file_access": "check_file_info"}`): `describe` fills in its name, type, size and
    download URL at turn time, before `fetch`; a file already described comes back as is."""

    async def describe(self, attachment: Attachment) -> Attachment:
        """The attachment as the platform describes it (one API call when it must ask)."""


@dataclass(frozen=True, slots=True)
class HistoryRequest:
    """What a turn asks of `ReadsHistory`: the earlier messages around `msg` (its batch's
    newest), older than it, newer than `after` when given (catch-up since the bot last spoke;
    None = the bot has no history here yet), at most `limit` of them."""

    msg: InboundMessage
    after: str | None
    limit: int


@runtime_checkable
class ReadsHistory(Protocol):
    """An adapter that can read the conversation a message was sent into (a Slack thread or
    channel, a Discord thread, channel or reply chain), for the agent to see as context.

    Called by a worker at turn time, never on ingress. Each call is charged to the platform's
    API budget and bounded in time by the adapter; any failure (a missing scope or permission,
    a 429, a timeout, an exhausted budget) is a `PlatformError` (`PlatformRateLimited` for the
    last two kinds), and the turn goes on without context. Messages come back in any order;
    the manager filters, orders and trims them."""

    async def read_history(self, request: HistoryRequest) -> Sequence[ContextMessage]:
        """Earlier messages of the conversation, display names resolved, mentions readable."""


@runtime_checkable
class SendsFiles(Protocol):
    """An adapter that uploads files natively (a document, a photo) into a conversation."""

    @property
    def max_upload_bytes(self) -> int:
        """The platform's upload limit for a bot; bigger files get a notice instead."""

    async def send_file(self, target: ReplyTarget, name: str, data: bytes, mime: str) -> SentRef:
        """Upload one file into the target's thread; `FileTooLarge` over `max_upload_bytes`."""


@runtime_checkable
class ExclusiveReceiver(Protocol):
    """An adapter whose inbound connection must have one owner in the fleet: Telegram long
    polling (a second poller gets 409 Conflict) and the Discord gateway. Started with
    `start(receive=False)` it only sends; the service opens the connection with
    `start_receiving` while this process holds the connection's lease."""

    @property
    def connection_name(self) -> str:
        """The lease name, unique per bot (e.g. `telegram:polling:<bot id>`)."""

    async def start_receiving(self) -> None:
        """Open the inbound connection; raises if it cannot be opened."""

    async def stop_receiving(self) -> None:
        """Close the inbound connection, keep sending; idempotent."""


@runtime_checkable
class ReportsHealth(Protocol):
    """An adapter whose platform connection can die after `start()` (a gateway, a socket)
    says whether it is up, so `/readyz` reports a channel that is down."""

    @property
    def healthy(self) -> bool:
        """Connected and able to receive right now."""


async def deliver_until_taken(
    deliver: Deliver, msg: InboundMessage, *, stopping: Callable[[], bool]
) -> bool:
    """For sources that cannot be told "try later" (the Telegram polling loop, the Discord
    gateway): retry `deliver` with backoff until it succeeds or the adapter stops. Polling waits
    here, so its offset is not advanced past a message that was not taken. False if stopped."""
    delay = 0.1
    while True:
        try:
            await deliver(msg)
            return True
        except SwitchboardError as exc:
            if stopping():
                _log.error("message.not_taken", category=exc.category, platform=str(msg.platform))
                return False
            _log.warning("message.deliver_retry", category=exc.category, delay_s=delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 5.0)
