"""The service's HTTP app: link API and page, admin config, health, metrics, platform webhooks.

Errors are always JSON `{"error": "..."}`:

| status | when                                                                       |
|--------|----------------------------------------------------------------------------|
| 400    | token of the wrong kind for the endpoint; unparsable form; a webhook or    |
|        | admin body nested deeper than 64 levels (checked before any parser recurses) |
| 401    | missing, invalid or revoked API key (or admin key)                         |
| 404    | unknown token, unknown link *and someone else's link* (same body)          |
| 409    | target already linked (to you, or to another account)                      |
| 410    | token expired, superseded by a newer `/link`, or already used              |
| 403    | an admin change refused by policy (a command over HTTP while               |
|        | SWITCHBOARD_ADMIN_ALLOW_COMMANDS is off)                                   |
| 413    | request body over 1 MiB (checked before it is read)                        |
| 422    | malformed token (over 64 chars or outside `[A-Za-z0-9_-]`), bad request    |
| 429    | too many wrong admin keys from one address (with Retry-After)              |
| 503    | storage unreachable, or not ready                                          |
| 500    | a true server fault only: logged with a reference id, no details returned  |
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any, Literal
from urllib.parse import unquote_to_bytes

import structlog
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import channels.metrics  # noqa: F401 - /metrics must list ours even before any traffic
from agent import McpConfigFile
from channels.usage import UsageDesk
from service.admin_auth import AdminAuth, Verdict
from service.bindings_api import add_bindings_admin
from service.bindings_sync import BindingsSync
from service.console import ConsoleSources, add_console
from service.feedback_api import add_feedback_admin
from service.link_page import PAGE_HEADERS, confirm_page, message_page
from service.mcp_api import McpEditor, McpReloader, add_mcp_admin
from service.settings import Settings
from service.usage_api import add_usage_admin
from storage import (
    Account,
    Accounts,
    AlreadyLinked,
    FeedbackStore,
    Link,
    LinkError,
    LinkKind,
    LinkNotFound,
    Links,
    LinkToken,
    TokenGone,
    TokenNotFound,
    TokenState,
    WrongTokenKind,
    is_wellformed_id,
)
from switchboard.errors import StorageError

__all__ = [
    "MAX_JSON_DEPTH",
    "ErrorBody",
    "LinkList",
    "LinkOut",
    "TokenInfo",
    "build_http_app",
    "too_deep",
]

_log = structlog.get_logger(__name__)

Webhook = Callable[[Request], Awaitable[Response]]

_NOT_FOUND_TOKEN = "unknown link token"
_NOT_FOUND_LINK = "no such link"
_MALFORMED_TOKEN = "malformed token: expected 1-64 characters of A-Z, a-z, 0-9, '_' or '-'"
_GONE = {
    TokenState.USED: "this link token was already used",
    TokenState.EXPIRED: "this link token has expired; run /link again in chat",
    TokenState.SUPERSEDED: "a newer /link replaced this link token; use the newest one",
}


class ErrorBody(BaseModel):
    error: str


class TokenInfo(BaseModel):
    platform: str
    kind: Literal["server", "user"]
    target_id: str
    target_name: str
    requested_by: str
    expires_at: datetime


class LinkOut(BaseModel):
    id: str
    platform: str
    kind: Literal["server", "user"]
    target_id: str
    target_name: str
    linked_by: str
    created_at: datetime


class LinkList(BaseModel):
    links: list[LinkOut]


class Deleted(BaseModel):
    deleted: str


class _ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=dict(headers or {}))


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def _token_info(token: LinkToken) -> TokenInfo:
    return TokenInfo(
        platform=token.platform,
        kind=token.kind.value,
        target_id=token.target_id,
        target_name=token.target_name,
        requested_by=token.user_name or token.user_id,
        expires_at=_when(token.expires_at),
    )


def _link_out(link: Link) -> LinkOut:
    return LinkOut(
        id=link.id,
        platform=link.platform,
        kind=link.kind.value,
        target_id=link.target_id,
        target_name=link.target_name,
        linked_by=link.owner_name or link.owner_id,
        created_at=_when(link.created_at),
    )


def _link_error(exc: LinkError, *, token: str) -> _ApiError:
    """One status and message per link failure, shared by the JSON API and the HTML page."""
    if isinstance(exc, TokenNotFound | LinkNotFound):
        return _ApiError(
            404, _NOT_FOUND_TOKEN if isinstance(exc, TokenNotFound) else _NOT_FOUND_LINK
        )
    if isinstance(exc, TokenGone):
        return _ApiError(410, _GONE.get(exc.state, str(exc)))
    if isinstance(exc, AlreadyLinked):
        return _ApiError(409, str(exc))
    if isinstance(exc, WrongTokenKind):
        path = (
            f"/api/links/tokens/{token}/confirm"
            if exc.kind is LinkKind.SERVER
            else f"/api/links/user-tokens/{token}/confirm"
        )
        return _ApiError(400, f"this is a {exc.kind.value} link token; confirm it at {path}")
    return _ApiError(400, str(exc))


def _check_token(token: str) -> None:
    if not is_wellformed_id(token):
        raise _ApiError(422, _MALFORMED_TOKEN)


class _TrackedSend:
    """`send` that remembers whether a response began: after that, no error reply is possible."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


class _CatchAll:
    """Turn an unexpected exception into a detail-free JSON 500 with a logged reference id.

    Sits inside Starlette's ServerErrorMiddleware (which would re-raise after answering), so a
    fault is answered and logged once and never reaches the server as an unhandled error.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracked = _TrackedSend(send)
        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            ref = secrets.token_hex(4)
            _log.error(
                "http.failed",
                ref=ref,
                method=scope.get("method"),
                route=getattr(scope.get("route"), "path", None),  # the template: no tokens
                exc_info=exc,
            )
            if not tracked.started:
                await _error(500, f"internal error (ref {ref})")(scope, receive, send)


MAX_BODY_BYTES = 1024 * 1024  # platform webhooks are a few KiB; nothing we serve needs more


class _BodyTooLarge(Exception):
    pass


class _BodyLimit:
    """Refuse request bodies over `max_bytes` with a JSON 413, before anything reads them whole
    (a declared Content-Length is checked up front; a streamed body is counted as it arrives)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _error(413, "request body too large")(scope, receive, send)
            return
        seen = 0
        tracked = _TrackedSend(send)

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, counting_receive, tracked)
        except _BodyTooLarge:
            if not tracked.started:
                await _error(413, "request body too large")(scope, receive, send)


def build_http_app(
    *,
    settings: Settings,
    accounts: Accounts,
    links: Links,
    ready: Callable[[], Awaitable[bool]],
    webhooks: Mapping[str, Webhook] | None = None,
    usage: UsageDesk | None = None,
    mcp_file: McpConfigFile | None = None,
    mcp_agent: McpReloader | None = None,
    status: Callable[[], dict[str, object]] | None = None,
    console: ConsoleSources | None = None,
    feedback: FeedbackStore | None = None,
    bindings: BindingsSync | None = None,
) -> FastAPI:
    # The API description is for operators: off unless an admin key says one is running this.
    documented = settings.admin_key is not None and bool(settings.admin_key.get_secret_value())
    app = FastAPI(
        title="Switchboard",
        summary="Link chat workspaces and DMs to Switchboard accounts; operations endpoints.",
        version="0.1.0",
        openapi_url="/api/openapi.json" if documented else None,
        docs_url="/api/docs" if documented else None,
        redoc_url=None,
    )
    # The body limit sits inside the catch-all so its own signal never reaches it as a fault.
    app.add_middleware(_BodyLimit)
    app.add_middleware(_CatchAll)
    _install_error_handlers(app)
    bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")

    async def account(
        creds: HTTPAuthorizationCredentials | None = Depends(bearer),
    ) -> Account:
        if creds is None or not creds.credentials:
            raise _ApiError(
                401, "missing API key: send Authorization: Bearer <key>", _BEARER_CHALLENGE
            )
        found = await accounts.authenticate(creds.credentials)
        if found is None:
            raise _ApiError(401, "invalid or revoked API key", _BEARER_CHALLENGE)
        return found

    errors: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorBody} for code in (400, 401, 404, 409, 410, 422)
    }

    @app.get("/api/links/tokens/{token}", response_model=TokenInfo, responses=errors)
    async def get_token(token: str, who: Account = Depends(account)) -> TokenInfo:
        """What a link token would link: platform, kind, workspace or user, expiry."""
        _check_token(token)
        try:
            found = await links.peek(token)
        except LinkError as exc:
            raise _link_error(exc, token=token) from None
        if found.state is not TokenState.PENDING:
            raise _ApiError(410, _GONE[found.state])
        return _token_info(found)

    async def confirm(token: str, who: Account, kind: LinkKind) -> LinkOut:
        _check_token(token)
        try:
            link = await links.confirm(token, who.name, kind)
        except LinkError as exc:
            raise _link_error(exc, token=token) from None
        _log.info("link.confirmed", kind=str(kind), platform=link.platform, account=who.name)
        return _link_out(link)

    @app.post(
        "/api/links/tokens/{token}/confirm",
        response_model=LinkOut,
        status_code=201,
        responses=errors,
    )
    async def confirm_server(token: str, who: Account = Depends(account)) -> LinkOut:
        """Link a workspace (server-link token) to the caller's account."""
        return await confirm(token, who, LinkKind.SERVER)

    @app.post(
        "/api/links/user-tokens/{token}/confirm",
        response_model=LinkOut,
        status_code=201,
        responses=errors,
    )
    async def confirm_user(token: str, who: Account = Depends(account)) -> LinkOut:
        """Link a person's DMs (user-link token) to the caller's account."""
        return await confirm(token, who, LinkKind.USER)

    @app.get("/api/links", response_model=LinkList, responses=errors)
    async def list_links(who: Account = Depends(account)) -> LinkList:
        """The caller's links."""
        return LinkList(links=[_link_out(link) for link in await links.list(who.name)])

    @app.delete("/api/links/{link_id}", response_model=Deleted, responses=errors)
    async def delete_link(link_id: str, who: Account = Depends(account)) -> Deleted:
        """Remove one of the caller's links; anyone else's is "not found", like a missing one."""
        try:
            await links.delete(who.name, link_id)
        except LinkError as exc:
            raise _link_error(exc, token="") from None
        _log.info("link.deleted", account=who.name)
        return Deleted(deleted=link_id)

    _add_link_page(app, accounts=accounts, links=links)
    # One key checker, so wrong keys count across every admin route and the console's login.
    auth = AdminAuth(settings.admin_key.get_secret_value() if settings.admin_key else "")
    admin = _admin_guard(auth)
    # One MCP editor, so the console and the API refuse the same changes and never race.
    mcp = McpEditor(
        file=mcp_file,
        agent=mcp_agent,
        allowed_vars=settings.mcp_allowed_var_names,
        allow_commands=settings.admin_allow_commands == "on",
    )
    if console is not None:
        add_console(app, console, auth=auth, mcp=mcp)
    if usage is not None:
        admin_codes = (400, 401, 422, 429, 503)
        add_usage_admin(
            app,
            usage=usage,
            admin=admin,
            responses={code: {"model": ErrorBody} for code in admin_codes},
        )
    if feedback is not None:
        add_feedback_admin(
            app,
            votes=feedback,
            admin=admin,
            responses={code: {"model": ErrorBody} for code in (401, 422, 429, 503)},
        )
    add_bindings_admin(
        app,
        sync=bindings,
        admin=admin,
        responses={code: {"model": ErrorBody} for code in (401, 409, 422, 429)},
    )
    add_mcp_admin(
        app,
        editor=mcp,
        admin=admin,
        responses={code: {"model": ErrorBody} for code in (400, 401, 403, 409, 422, 429, 503)},
    )
    _add_ops(app, settings=settings, ready=ready, status=status, admin=admin, auth=auth)
    for path, handler in (webhooks or {}).items():
        _add_webhook(app, path, handler)
    return app


_BEARER_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(_ApiError)
    async def api_error(request: Request, exc: _ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        return _error(422, f"invalid request: {where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if message == HTTPStatus(exc.status_code).phrase:
            message = message.lower()  # Starlette's own "Not Found"; ours keep variable names
        return _error(exc.status_code, message or "request failed", exc.headers)

    @app.exception_handler(StorageError)
    async def storage_down(request: Request, exc: StorageError) -> JSONResponse:
        ref = secrets.token_hex(4)
        _log.error("http.storage_failed", ref=ref, error=str(exc))
        return _error(503, f"storage unavailable, try again (ref {ref})")


def _add_link_page(app: FastAPI, *, accounts: Accounts, links: Links) -> None:
    def page(status: int, body: str) -> HTMLResponse:
        return HTMLResponse(body, status_code=status, headers=PAGE_HEADERS)

    async def pending_token(token: str) -> LinkToken | HTMLResponse:
        if not is_wellformed_id(token):
            return page(422, message_page("Malformed link", _MALFORMED_TOKEN))
        try:
            found = await links.peek(token)
        except LinkError:
            return page(404, message_page("Unknown link", "This link is not valid."))
        if found.state is not TokenState.PENDING:
            return page(410, message_page("Link no longer valid", _GONE[found.state]))
        return found

    @app.get("/link/{token}", response_class=HTMLResponse, include_in_schema=False)
    async def link_page(token: str) -> HTMLResponse:
        found = await pending_token(token)
        if isinstance(found, HTMLResponse):
            return found
        return page(200, confirm_page(found))

    @app.post("/link/{token}", response_class=HTMLResponse, include_in_schema=False)
    async def link_form(token: str, request: Request) -> HTMLResponse:
        found = await pending_token(token)
        if isinstance(found, HTMLResponse):
            return found
        try:
            form = await request.form()
            api_key = form.get("api_key")
        except Exception:  # multipart parser errors: the client sent a broken body
            return page(400, confirm_page(found, error="Could not read the form; try again."))
        who = await accounts.authenticate(api_key.strip()) if isinstance(api_key, str) else None
        if who is None:
            return page(401, confirm_page(found, error="That API key is not valid."))
        try:
            link = await links.confirm(token, who.name)
        except LinkError as exc:
            err = _link_error(exc, token=token)
            return page(err.status, message_page("Not linked", err.message))
        _log.info("link.confirmed", kind=str(link.kind), platform=link.platform, account=who.name)
        return page(
            200,
            message_page(
                "Linked",
                f"{link.target_name or link.target_id} is now linked to the Switchboard "
                f"account {who.name}. You can close this page.",
            ),
        )


def _add_ops(
    app: FastAPI,
    *,
    settings: Settings,
    ready: Callable[[], Awaitable[bool]],
    status: Callable[[], dict[str, object]] | None = None,
    admin: Callable[..., Awaitable[None]],
    auth: AdminAuth,
) -> None:
    ops_bearer = HTTPBearer(auto_error=False, description="optional: the admin key")

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], responses={503: {"model": ErrorBody}})
    async def readyz(
        request: Request, creds: HTTPAuthorizationCredentials | None = Depends(ops_bearer)
    ) -> Response:
        """Redis is reachable and every configured channel has started. Agents that cannot
        answer are counted; which ones and why only with the admin key (specs, module paths,
        URLs, hosts and errors are the operator's business). Any detail that names things and
        why (a mapping) is so reduced to its count, whatever `status` comes to report."""
        try:
            ok = await ready()
        except Exception as exc:
            _log.warning("ready.check_failed", error=type(exc).__name__)
            ok = False
        if not ok:
            return _error(503, "not ready")
        details = dict(status() if status else {})
        counted = {key: len(value) for key, value in details.items() if isinstance(value, Mapping)}
        if counted and not _is_admin(auth, request, creds):
            details.update(counted)
        return JSONResponse({"status": "ready", **details})

    @app.get("/metrics", tags=["ops"], response_class=Response)
    async def metrics() -> Response:
        """Prometheus exposition of the default registry."""
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @app.get(
        "/api/admin/config",
        tags=["ops"],
        responses={code: {"model": ErrorBody} for code in (401, 429)},
        dependencies=[Depends(admin)],
    )
    async def admin_config() -> dict[str, Any]:
        """Effective settings with every secret shown as `***` (needs SWITCHBOARD_ADMIN_KEY)."""
        return settings.public_view()


def _is_admin(
    auth: AdminAuth, request: Request, creds: HTTPAuthorizationCredentials | None
) -> bool:
    """Whether a request that may go without the admin key carries it (a wrong one counts
    towards the address's lockout, as on any admin route)."""
    if creds is None or not creds.credentials:
        return False
    client = request.client.host if request.client else "unknown"
    route = getattr(request.scope.get("route"), "path", "")
    return auth.check(creds.credentials, client=client, route=route).verdict is Verdict.OK


def _admin_guard(auth: AdminAuth) -> Callable[..., Awaitable[None]]:
    """A dependency admitting only `Authorization: Bearer <SWITCHBOARD_ADMIN_KEY>`, from an
    address not locked out for wrong keys (`service/admin_auth.py`), with a body no deeper than
    the public endpoints accept."""
    admin_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <admin key>")

    async def require_admin(
        request: Request,
        creds: HTTPAuthorizationCredentials | None = Depends(admin_bearer),
    ) -> None:
        client = request.client.host if request.client else "unknown"
        route = getattr(request.scope.get("route"), "path", "")  # the template: no user ids
        found = auth.check(creds.credentials if creds else None, client=client, route=route)
        if found.verdict is Verdict.DISABLED:
            raise _ApiError(401, "admin API disabled: set SWITCHBOARD_ADMIN_KEY", _BEARER_CHALLENGE)
        if found.verdict is Verdict.LIMITED:
            raise _ApiError(
                429,
                "too many wrong admin keys from this address; try again later",
                {"Retry-After": str(found.retry_after_s)},
            )
        if found.verdict is not Verdict.OK:
            raise _ApiError(401, "invalid admin key", _BEARER_CHALLENGE)
        if too_deep(await request.body(), request.headers.get("content-type")):
            _log.info("admin.rejected", route=route, reason="nesting")
            raise _ApiError(400, f"malformed body: JSON nested deeper than {MAX_JSON_DEPTH}")

    return require_admin


MAX_JSON_DEPTH = 64  # real updates nest about 15 deep; far deeper is an attack on the parser
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(body: bytes, content_type: str | None, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a JSON (or Slack's form-encoded JSON) body nests deeper than `limit`, found
    without parsing it: a parser recursing that deep would raise RecursionError (an HTTP 500)."""
    if (content_type or "").split(";")[0].strip() == "application/x-www-form-urlencoded":
        body = unquote_to_bytes(body.replace(b"+", b" "))
    depth = 0
    for bracket in _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS):
        if bracket in b"[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _add_webhook(app: FastAPI, path: str, handler: Webhook) -> None:
    async def webhook(request: Request) -> Response:
        if too_deep(await request.body(), request.headers.get("content-type")):
            _log.info("webhook.rejected", path=path, reason="nesting")
            return _error(400, f"malformed body: JSON nested deeper than {MAX_JSON_DEPTH}")
        return await handler(request)

    app.add_api_route(
        path, webhook, methods=["POST"], include_in_schema=False, name=f"webhook:{path}"
    )
