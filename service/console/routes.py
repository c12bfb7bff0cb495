"""The console's routes: login and the guard, then each page (overview, conversations, failures,
accounts, links here; usage, feedback and MCP in their own modules), a GET that shows and POSTs
that change, through the stores and desks the JSON admin API and the CLI call."""

from __future__ import annotations

import asyncio

import structlog
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

from service.admin_auth import AdminAuth
from service.console.auth import Guarded, Visit, add_login
from service.console.conversations import platform_of, recent_turns
from service.console.mcp_page import mcp_page
from service.console.overview import read_overview
from service.console.pages import page
from service.console.signing import Signer
from service.console.sources import ConsoleSources
from service.console.usage_pages import feedback_page, usage_page
from service.mcp_api import McpEditor
from storage import AccountError, LinkError, is_wellformed_id

__all__ = ["add_console"]

_log = structlog.get_logger(__name__)


def add_console(app: FastAPI, src: ConsoleSources, *, auth: AdminAuth, mcp: McpEditor) -> None:
    """`/admin` and its pages; without an admin key, one page saying how to turn it on. `auth`
    and `mcp` are the JSON admin API's own, so wrong keys count across both and an MCP change
    refused by one is refused by the other."""
    key = src.settings.admin_key.get_secret_value() if src.settings.admin_key else ""
    if not key:

        @app.get("/admin", include_in_schema=False)
        async def disabled() -> HTMLResponse:
            return page(
                "message.html",
                title="Console disabled",
                message="Set SWITCHBOARD_ADMIN_KEY to turn on the operator console.",
                status=404,
            )

        return
    guard = add_login(app, src, Signer(key), auth)
    for path, handler in (
        ("/admin", _overview(src)),
        ("/admin/conversations", _conversations(src)),
        ("/admin/failures", _failures(src)),
        ("/admin/accounts", _accounts(src)),
        ("/admin/links", _links(src)),
        ("/admin/usage", usage_page(src)),
        ("/admin/feedback", feedback_page(src)),
        ("/admin/mcp", mcp_page(mcp)),
    ):
        guard(path, handler)


def _overview(src: ConsoleSources) -> Guarded:
    async def show(visit: Visit) -> Response:
        return page(
            "overview.html",
            title="Overview",
            here="/admin",
            csrf=visit.csrf,
            o=await read_overview(src),
        )

    return show


def _conversations(src: ConsoleSources) -> Guarded:
    async def show(visit: Visit) -> Response:
        thread_id, key = visit.get("thread"), visit.get("key")
        if thread_id and not is_wellformed_id(thread_id):
            return page(
                "message.html",
                title="No such conversation",
                message="That is not a thread id.",
                back="/admin/conversations",
                csrf=visit.csrf,
                status=404,
            )
        if thread_id:
            return page(
                "thread.html",
                title="Conversation",
                here="/admin/conversations",
                csrf=visit.csrf,
                key=key,
                platform=platform_of(key),
                thread_id=thread_id,
                state=await src.queue.state(thread_id),
                turns=await recent_turns(src.checkpoints, thread_id),
                show_text=src.settings.admin_show_text == "on",
            )
        listed = await src.threads.recent()
        states = await asyncio.gather(*(src.queue.state(c.thread_id) for c in listed))
        return page(
            "conversations.html",
            title="Conversations",
            here="/admin/conversations",
            csrf=visit.csrf,
            rows=[(c, platform_of(c.key), s) for c, s in zip(listed, states, strict=True)],
        )

    return show


def _failures(src: ConsoleSources) -> Guarded:
    async def show(visit: Visit) -> Response:
        ref = visit.get("ref")
        found = await (src.failures.find(ref) if ref else src.failures.recent(100))
        return page(
            "failures.html",
            title="Failures",
            here="/admin/failures",
            csrf=visit.csrf,
            ref=ref,
            failures=found,
        )

    return show


def _accounts(src: ConsoleSources) -> Guarded:
    async def show(visit: Visit) -> Response:
        notice = error = new_key = ""
        status = 200
        action, name = visit.get("action"), visit.get("name")
        if visit.request.method == "POST":
            try:
                if action == "create":
                    new_key = await src.accounts.create(name)
                    notice = f"Account {name} created."
                    _log.info("console.account_created", account=name)
                elif action == "revoke":
                    await src.accounts.revoke(name)
                    notice = f"Account {name} revoked: its API key no longer works."
                    _log.info("console.account_revoked", account=name)
                else:
                    error, status = "Unknown action.", 400
            except AccountError as exc:
                error, status = str(exc), 409 if "exists" in str(exc) else 400
        return page(
            "accounts.html",
            title="Accounts",
            here="/admin/accounts",
            csrf=visit.csrf,
            accounts=await src.accounts.list(),
            new_key=new_key,
            new_name=name if new_key else "",
            notice=notice,
            error=error,
            status=status,
        )

    return show


def _links(src: ConsoleSources) -> Guarded:
    async def show(visit: Visit) -> Response:
        notice = error = ""
        status = 200
        if visit.request.method == "POST":
            action = visit.get("action")
            try:
                if action == "confirm":
                    notice = await _confirm(src, visit.get("token"), visit.get("account"))
                elif action == "delete":
                    link = await src.links.delete(visit.get("account"), visit.get("link_id"))
                    notice = f"Link to {link.target_name or link.target_id} deleted."
                    _log.info("console.link_deleted", platform=link.platform)
                else:
                    error, status = "Unknown action.", 400
            except (LinkError, AccountError) as exc:
                error, status = str(exc), 400
        accounts = await src.accounts.list()
        return page(
            "links.html",
            title="Links",
            here="/admin/links",
            csrf=visit.csrf,
            links=await src.links.list(),
            accounts=[a.name for a in accounts if a.active],
            notice=notice,
            error=error,
            status=status,
        )

    return show


async def _confirm(src: ConsoleSources, token_or_url: str, account: str) -> str:
    """The CLI's `links confirm`: a token or the whole link URL, for an active account."""
    token = token_or_url.rstrip("/").rsplit("/", 1)[-1]
    if not is_wellformed_id(token):
        raise LinkError("malformed token: paste the link URL or its last part")
    found = await src.accounts.get(account)
    if found is None or not found.active:
        raise AccountError(f"no active account named {account!r}")
    link = await src.links.confirm(token, account)
    _log.info("console.link_confirmed", kind=str(link.kind), platform=link.platform)
    return (
        f"Linked {link.target_name or link.target_id} ({link.kind} link, {link.platform}) "
        f"to account {link.account}."
    )
