"""Who the bot serves (`SWITCHBOARD_ACCESS`), and the chat side of `/link` and `/unlink`.

In `linked` mode a workspace message is served only when its workspace is linked to an account,
and a DM only when its sender linked their DMs (or, where the platform reports one, the DM's
workspace is linked). Strangers who add the bot get one notice per chat per hour, not a reply per
message, so they cannot spend the operator's model budget or make the bot spam.

The texts are pure functions of plain values (tested without Redis); `AccessGate` does the I/O.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import structlog

from channels.message import InboundMessage, Platform
from storage import (
    NOTICE_TTL_S,
    Keys,
    LinkKind,
    LinkRateLimited,
    Links,
    LinkToken,
    NoticeLimiter,
    UnlinkResult,
    UnlinkStatus,
)

if TYPE_CHECKING:
    import redis.asyncio as aioredis

__all__ = [
    "AccessDecision",
    "AccessGate",
    "LinkReply",
    "already_linked_text",
    "console_link_text",
    "gate_notice",
    "link_offer_text",
    "link_url",
    "non_admin_text",
    "rate_limited_text",
    "unlink_text",
]

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Place:
    workspace: str  # what a linked workspace is called on this platform
    admin: str  # who may link it


_PLACES = {
    Platform.SLACK: _Place("Slack workspace", "a workspace admin"),
    Platform.DISCORD: _Place("Discord server", "someone with Manage Server"),
    Platform.TELEGRAM: _Place("Telegram group", "a group admin"),
    Platform.CONSOLE: _Place("console", "the operator"),
}


def _place(platform: Platform) -> _Place:
    return _PLACES.get(platform, _Place("workspace", "an admin"))


def _account_label(platform: Platform) -> str:
    return f"{platform.value.capitalize()} account"


def _subject(platform: Platform, *, is_dm: bool) -> str:
    return f"Your {_account_label(platform)}" if is_dm else f"This {_place(platform).workspace}"


@dataclass(frozen=True, slots=True)
class LinkReply:
    """The answer to `/link`, and the token it shows (None when it shows none), so a reply
    that never reached its person can be withdrawn (`AccessGate.withdraw`)."""

    text: str = field(repr=False)
    token: LinkToken | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class AccessDecision:
    allowed: bool
    notice: str | None = None  # shown to the chat at most once per hour; None = stay silent


# -- texts (pure) ----------------------------------------------------------------------------


def gate_notice(platform: Platform, *, is_dm: bool) -> str:
    if is_dm:
        return (
            f"Your {_account_label(platform)} isn't linked to Switchboard yet. Send /link here "
            "and open the link I reply with to connect it to a Switchboard account "
            "(you'll need that account's API key)."
        )
    place = _place(platform)
    return (
        f"This {place.workspace} isn't linked to Switchboard yet — {place.admin} can run /link "
        "to connect it to a Switchboard account."
    )


def link_url(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/link/{token}"


def link_offer_text(token: LinkToken, *, platform: Platform, is_dm: bool, public_url: str) -> str:
    minutes = max(1, round((token.expires_at - token.created_at) / 60))
    until = time.strftime("%H:%M UTC", time.gmtime(token.expires_at))
    what = "your DMs with me" if is_dm else f"this {_place(platform).workspace}"
    return (
        f"Open this link within {minutes} minutes (until {until}) to connect {what} to your "
        f"Switchboard account:\n{link_url(public_url, token.token)}\n"
        "It works once, and running /link again replaces it. Keep it private."
    )


def non_admin_text(platform: Platform) -> str:
    place = _place(platform)
    return (
        f"Only {place.admin} can link this {place.workspace} to Switchboard. "
        "Ask one of them to run /link here."
    )


def already_linked_text(platform: Platform, *, is_dm: bool) -> str:
    tail = "" if is_dm else " The person who linked it can run /unlink."
    return f"{_subject(platform, is_dm=is_dm)} is already linked to Switchboard.{tail}"


def rate_limited_text(retry_after: float) -> str:
    minutes = max(1, round(retry_after / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many /link requests here — try again in {minutes} {unit}."


def console_link_text() -> str:
    return "The local console is always served; there is nothing to link."


def unlink_text(result: UnlinkResult, *, platform: Platform, is_dm: bool) -> str:
    subject = _subject(platform, is_dm=is_dm)
    if result.status is UnlinkStatus.UNLINKED:
        return f"{subject} is no longer linked to Switchboard."
    if result.status is UnlinkStatus.NOT_LINKED:
        return f"{subject} isn't linked to Switchboard."
    who = (result.link.owner_name if result.link else "") or "the person who linked it"
    thing = "these DMs" if is_dm else f"this {_place(platform).workspace}"
    return (
        f"Only {who} can unlink {thing} from chat. The Switchboard account owner can also "
        "remove the link with their API key."
    )


# -- the gate (I/O) --------------------------------------------------------------------------


def _workspace_id(msg: InboundMessage) -> str:
    return msg.workspace_id or msg.chat_id


class AccessGate:
    def __init__(
        self,
        *,
        links: Links,
        redis: aioredis.Redis,
        keys: Keys,
        mode: Literal["linked", "open"],
        public_url: str,
        notice_ttl_s: int = NOTICE_TTL_S,
    ) -> None:
        self._links = links
        self._notices = NoticeLimiter(redis, keys=keys, ttl_s=notice_ttl_s)
        self.mode = mode
        self.public_url = public_url

    async def check(self, msg: InboundMessage) -> AccessDecision:
        """Whether to serve this message; a denial carries a notice at most hourly per chat,
        and always for a native command (answered to its sender alone, and a Discord one waits
        for an answer)."""
        if msg.platform is Platform.CONSOLE or self.mode == "open":
            return AccessDecision(allowed=True)
        if await self._is_linked(msg):
            return AccessDecision(allowed=True)
        if msg.native is not None or await self._notices.claim(str(msg.platform), msg.chat_id):
            return AccessDecision(allowed=False, notice=gate_notice(msg.platform, is_dm=msg.is_dm))
        return AccessDecision(allowed=False)

    async def allows(self, msg: InboundMessage) -> bool:
        """`check` without a notice and without spending the chat's notice budget: for
        messages that are only recorded, never answered (observed group messages)."""
        if msg.platform is Platform.CONSOLE or self.mode == "open":
            return True
        return await self._is_linked(msg)

    async def _is_linked(self, msg: InboundMessage) -> bool:
        platform = str(msg.platform)
        if msg.is_dm:
            if await self._links.is_user_linked(platform, msg.sender_id):
                return True
            # A Slack DM carries its team: members of a linked workspace are served in DMs too.
            return bool(msg.workspace_id) and await self._links.is_workspace_linked(
                platform, msg.workspace_id
            )
        return await self._links.is_workspace_linked(platform, _workspace_id(msg))

    async def link(self, msg: InboundMessage, *, is_admin: bool) -> LinkReply:
        """The private reply to `/link`: a one-time URL, or why there is none."""
        if msg.platform is Platform.CONSOLE:
            return LinkReply(console_link_text())
        platform = str(msg.platform)
        if msg.is_dm:
            kind, target, name = LinkKind.USER, msg.sender_id, msg.sender_name or msg.sender_id
        else:
            if not is_admin:
                _log.info("link.refused", reason="not_admin")
                return LinkReply(non_admin_text(msg.platform))
            target = _workspace_id(msg)
            kind, name = LinkKind.SERVER, f"{_place(msg.platform).workspace} {target}"
        if await self._links.link_for(kind, platform, target) is not None:
            return LinkReply(already_linked_text(msg.platform, is_dm=msg.is_dm))
        try:
            token = await self._links.create_token(
                kind,
                platform=platform,
                target_id=target,
                target_name=name,
                user_id=msg.sender_id,
                user_name=msg.sender_name,
            )
        except LinkRateLimited as exc:
            _log.info("link.rate_limited", retry_after=exc.retry_after)
            return LinkReply(rate_limited_text(exc.retry_after))
        _log.info("link.token_created", kind=str(kind))
        text = link_offer_text(
            token, platform=msg.platform, is_dm=msg.is_dm, public_url=self.public_url
        )
        return LinkReply(text, token)

    async def withdraw(self, reply: LinkReply) -> None:
        """Revoke the token of a `/link` answer nobody saw (the private message could not be
        delivered): a token is usable only by the person it was shown to."""
        if reply.token is not None and await self._links.revoke(reply.token):
            _log.info("link.token_withdrawn", kind=str(reply.token.kind))

    async def unlink(self, msg: InboundMessage) -> str:
        """The private reply to `/unlink`; only the person who linked may unlink from chat."""
        if msg.platform is Platform.CONSOLE:
            return console_link_text()
        if msg.is_dm:
            kind, target = LinkKind.USER, msg.sender_id
        else:
            kind, target = LinkKind.SERVER, _workspace_id(msg)
        result = await self._links.unlink(kind, str(msg.platform), target, by_user=msg.sender_id)
        _log.info("link.unlink_requested", outcome=str(result.status))
        return unlink_text(result, platform=msg.platform, is_dm=msg.is_dm)
