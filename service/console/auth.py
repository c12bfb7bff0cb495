"""Logging in and out of the console, and the guard every other console route runs behind.

A login is checked by the same `AdminAuth` as the JSON admin API, so wrong keys are counted (and
rate limited, and logged without the key) across both. A good key opens a session in Redis and
sets a signed cookie: `HttpOnly`, `SameSite=Strict`, `Secure` when the console is reached over
HTTPS (or `SWITCHBOARD_PUBLIC_URL` is HTTPS), scoped to `/admin` and expiring with the session.
Every POST must carry the session's CSRF token; the login form carries one bound to a cookie of
its own, since no session exists yet.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException

from service.admin_auth import AdminAuth, Verdict
from service.console.pages import page, redirect
from service.console.signing import Signer
from service.console.sources import ConsoleSources
from switchboard.errors import StorageError

__all__ = ["SESSION_COOKIE", "Guarded", "Visit", "add_login"]

SESSION_COOKIE = "sb_console"
_LOGIN_COOKIE = "sb_console_login"
_LOGIN_FORM_TTL_S = 3600

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Visit:
    """One signed-in request: its form (POST) or query (GET) values and the page's CSRF token."""

    request: Request
    csrf: str
    values: dict[str, str]

    def get(self, name: str) -> str:
        return self.values.get(name, "").strip()


Guarded = Callable[[Visit], Awaitable[Response]]


def _secure(request: Request, src: ConsoleSources) -> bool:
    return request.url.scheme == "https" or src.settings.public_url.startswith("https://")


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def _values(request: Request) -> dict[str, str] | None:
    """The form's text fields (POST) or the query (GET); None for an unreadable body."""
    if request.method != "POST":
        return dict(request.query_params)
    try:
        form = await request.form()
    except (HTTPException, MultiPartException):  # the client sent a broken body
        return None
    return {k: v for k, v in form.items() if isinstance(v, str)}


def add_login(
    app: FastAPI, src: ConsoleSources, signer: Signer, auth: AdminAuth
) -> Callable[[str, Guarded], None]:
    """Adds `/admin/login` and `/admin/logout`; returns `guard(path, handler)`, which adds a
    GET and POST route that only a live session reaches, POSTs only with its CSRF token."""

    def login_page(request: Request, *, error: str = "", status: int = 200) -> Response:
        nonce = request.cookies.get(_LOGIN_COOKIE) or signer.login_nonce()
        response = page(
            "login.html",
            title="Log in",
            login_csrf=signer.login_csrf(nonce),
            error=error,
            notice=(
                "Your session has ended; log in again."
                if SESSION_COOKIE in request.cookies and not error
                else ""
            ),
            status=status,
        )
        response.set_cookie(
            _LOGIN_COOKIE,
            nonce,
            max_age=_LOGIN_FORM_TTL_S,
            path="/admin/login",
            httponly=True,
            samesite="strict",
            secure=_secure(request, src),
        )
        return response

    @app.get("/admin/login", include_in_schema=False)
    async def login_form(request: Request) -> Response:
        try:
            if await live_session(request) is not None:
                return redirect("/admin")  # already signed in
        except StorageError as exc:
            return _storage_down(exc)
        return login_page(request)

    @app.post("/admin/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        values = await _values(request) or {}
        if not signer.login_csrf_ok(request.cookies.get(_LOGIN_COOKIE), values.get("csrf")):
            _log.warning("console.csrf_refused", route="/admin/login", client=_client(request))
            return login_page(request, error="This form expired; try again.", status=403)
        found = auth.check(
            values.get("admin_key") or None, client=_client(request), route="/admin/login"
        )
        if found.verdict is Verdict.LIMITED:
            response = login_page(
                request,
                error="Too many wrong admin keys from this address; try again in "
                f"{found.retry_after_s} s.",
                status=429,
            )
            response.headers["Retry-After"] = str(found.retry_after_s)
            return response
        if found.verdict is not Verdict.OK:
            return login_page(request, error="That admin key is not valid.", status=401)
        try:
            session_id = await src.sessions.open()
        except StorageError as exc:
            return _storage_down(exc)
        _log.info("console.login", client=_client(request))
        response = redirect("/admin")
        response.set_cookie(
            SESSION_COOKIE,
            signer.session_cookie(session_id),
            max_age=src.sessions.ttl_s,
            path="/admin",
            httponly=True,
            samesite="strict",
            secure=_secure(request, src),
        )
        response.delete_cookie(_LOGIN_COOKIE, path="/admin/login")
        return response

    async def live_session(request: Request) -> str | None:
        session_id = signer.session_id(request.cookies.get(SESSION_COOKIE))
        if session_id is not None and await src.sessions.alive(session_id):
            return session_id
        return None

    def guard(path: str, handler: Guarded) -> None:
        async def endpoint(request: Request) -> Response:
            try:
                session_id = await live_session(request)
                if session_id is None:
                    if request.method == "GET":
                        return redirect("/admin/login")
                    return page(
                        "message.html",
                        title="Session ended",
                        message="Your session has ended; log in again. Nothing was changed.",
                        back="/admin/login",
                        status=401,
                    )
                values = await _values(request)
                if values is None:
                    return page(
                        "message.html",
                        title="Unreadable form",
                        message="The form could not be read; try again.",
                        csrf=signer.csrf(session_id),
                        status=400,
                    )
                if request.method == "POST" and not signer.csrf_ok(session_id, values.get("csrf")):
                    _log.warning("console.csrf_refused", route=path, client=_client(request))
                    return page(
                        "message.html",
                        title="Form refused",
                        message="This form was not sent by this console session (or it is "
                        "from an old page); reload the page and try again. Nothing was changed.",
                        csrf=signer.csrf(session_id),
                        status=403,
                    )
                return await handler(Visit(request, signer.csrf(session_id), values))
            except StorageError as exc:
                return _storage_down(exc)

        app.add_api_route(path, endpoint, methods=["GET", "POST"], include_in_schema=False)

    async def logout(visit: Visit) -> Response:
        if visit.request.method != "POST":
            return redirect("/admin")
        session_id = signer.session_id(visit.request.cookies.get(SESSION_COOKIE))
        if session_id is not None:
            await src.sessions.close(session_id)
        _log.info("console.logout", client=_client(visit.request))
        response = redirect("/admin/login")
        response.delete_cookie(SESSION_COOKIE, path="/admin")
        return response

    guard("/admin/logout", logout)
    return guard


def _storage_down(exc: StorageError) -> Response:
    ref = secrets.token_hex(4)
    _log.error("console.storage_failed", ref=ref, error=str(exc))
    return page(
        "message.html",
        title="Storage unavailable",
        message=f"Redis could not be reached; try again (ref {ref}).",
        status=503,
    )
