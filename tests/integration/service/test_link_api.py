"""The link API's whole error matrix, atomic confirm, the HTML page and the ops endpoints."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from fastapi import Request, Response

from service.http import build_http_app
from storage import TOKEN_TTL_S, Accounts, Keys, LinkKind, Links, connect
from tests.integration.service.conftest import ADMIN_KEY, OPENAI_KEY, TELEGRAM_TOKEN, Api


def confirm_url(token: str, *, user: bool = False) -> str:
    return f"/api/links/{'user-tokens' if user else 'tokens'}/{token}/confirm"


# -- auth (401) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer sbk_not-a-real-key"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer " + "x" * 5000},
    ],
)
async def test_missing_or_invalid_key_is_401_json(api: Api, headers: dict[str, str]) -> None:
    token = await api.server_token()
    for method, url in (
        ("GET", f"/api/links/tokens/{token.token}"),
        ("POST", confirm_url(token.token)),
        ("GET", "/api/links"),
        ("DELETE", "/api/links/abc"),
    ):
        response = await api.client.request(method, url, headers=headers)
        assert response.status_code == 401, (method, url)
        assert set(response.json()) == {"error"}
        assert response.headers["www-authenticate"] == "Bearer"


async def test_revoked_key_is_refused_on_the_next_request(api: Api) -> None:
    auth = await api.account("acme")
    assert (await api.client.get("/api/links", headers=auth)).status_code == 200
    await api.accounts.revoke("acme")
    response = await api.client.get("/api/links", headers=auth)
    assert response.status_code == 401
    assert response.json() == {"error": "invalid or revoked API key"}


# -- token lookup and confirm ---------------------------------------------------------------


async def test_token_lookup_shows_what_would_be_linked(api: Api) -> None:
    auth = await api.account("acme")
    token = await api.server_token()
    response = await api.client.get(f"/api/links/tokens/{token.token}", headers=auth)
    assert response.status_code == 200
    body = response.json()
    assert body["platform"] == "slack" and body["kind"] == "server"
    assert body["target_name"] == "Slack workspace T1"
    assert body["requested_by"] == "alice"
    assert body["expires_at"].startswith("20")


async def test_confirm_links_workspace_and_lists_it(api: Api) -> None:
    auth = await api.account("acme")
    token = await api.server_token()
    response = await api.client.post(confirm_url(token.token), headers=auth)
    assert response.status_code == 201
    link = response.json()
    assert link["target_id"] == "T1" and link["kind"] == "server" and link["linked_by"] == "alice"
    assert await api.links.is_workspace_linked("slack", "T1")
    listed = (await api.client.get("/api/links", headers=auth)).json()
    assert [x["id"] for x in listed["links"]] == [link["id"]]


async def test_user_token_confirms_on_the_user_endpoint(api: Api) -> None:
    auth = await api.account("acme")
    token = await api.user_token()
    response = await api.client.post(confirm_url(token.token, user=True), headers=auth)
    assert response.status_code == 201
    assert await api.links.is_user_linked("telegram", "42")


@pytest.mark.parametrize(
    "token", ["a" * 65, "bad.token", "has%20space", "%C3%BC", "semi;colon", "quote%22"]
)
async def test_malformed_token_is_422(api: Api, token: str) -> None:
    auth = await api.account("acme")
    for method, url in (
        ("GET", f"/api/links/tokens/{token}"),
        ("POST", confirm_url(token)),
        ("POST", confirm_url(token, user=True)),
    ):
        response = await api.client.request(method, url, headers=auth)
        assert response.status_code == 422, (method, url)
        assert response.json()["error"].startswith("malformed token")


async def test_unknown_token_is_404(api: Api) -> None:
    auth = await api.account("acme")
    unknown = "A" * 43
    for method, url in (
        ("GET", f"/api/links/tokens/{unknown}"),
        ("POST", confirm_url(unknown)),
        ("POST", confirm_url(unknown, user=True)),
    ):
        response = await api.client.request(method, url, headers=auth)
        assert response.status_code == 404
        assert response.json() == {"error": "unknown link token"}


async def test_expired_token_is_410(api: Api) -> None:
    auth = await api.account("acme")
    token = await api.server_token()
    api.clock.offset = TOKEN_TTL_S + 1
    for method, url in (
        ("GET", f"/api/links/tokens/{token.token}"),
        ("POST", confirm_url(token.token)),
    ):
        response = await api.client.request(method, url, headers=auth)
        assert response.status_code == 410
        assert "expired" in response.json()["error"]


async def test_superseded_token_is_410_and_the_newest_works(api: Api) -> None:
    auth = await api.account("acme")
    old = await api.server_token()
    new = await api.server_token()
    response = await api.client.post(confirm_url(old.token), headers=auth)
    assert response.status_code == 410
    assert "newer /link" in response.json()["error"]
    assert (await api.client.post(confirm_url(new.token), headers=auth)).status_code == 201


async def test_used_token_is_410_once_its_link_is_gone(api: Api) -> None:
    auth = await api.account("acme")
    token = await api.server_token()
    link = (await api.client.post(confirm_url(token.token), headers=auth)).json()
    await api.client.delete(f"/api/links/{link['id']}", headers=auth)
    response = await api.client.post(confirm_url(token.token), headers=auth)
    assert response.status_code == 410
    assert "already used" in response.json()["error"]


async def test_already_linked_is_409_saying_to_whom(api: Api) -> None:
    mine = await api.account("acme")
    theirs = await api.account("other")
    first = await api.server_token()
    assert (await api.client.post(confirm_url(first.token), headers=mine)).status_code == 201
    again = await api.server_token()
    to_me = await api.client.post(confirm_url(again.token), headers=mine)
    assert to_me.status_code == 409
    assert "your account" in to_me.json()["error"]
    to_other = await api.client.post(confirm_url(again.token), headers=theirs)
    assert to_other.status_code == 409
    assert "another account" in to_other.json()["error"]
    assert "acme" not in to_other.json()["error"]


async def test_wrong_kind_for_endpoint_is_400(api: Api) -> None:
    auth = await api.account("acme")
    server = await api.server_token()
    user = await api.user_token()
    as_user = await api.client.post(confirm_url(server.token, user=True), headers=auth)
    assert as_user.status_code == 400
    assert "server link token" in as_user.json()["error"]
    as_server = await api.client.post(confirm_url(user.token), headers=auth)
    assert as_server.status_code == 400
    assert "/api/links/user-tokens/" in as_server.json()["error"]
    assert not await api.links.is_workspace_linked("slack", "T1")


async def test_twenty_concurrent_confirms_have_one_winner(api: Api) -> None:
    auths = [await api.account(f"acct{i}") for i in range(4)]
    token = await api.server_token()
    responses = await asyncio.gather(
        *(api.client.post(confirm_url(token.token), headers=auths[i % 4]) for i in range(20))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes.count(201) == 1
    assert set(codes) <= {201, 409, 410}
    assert len(await api.links.list()) == 1


# -- links: list and delete -----------------------------------------------------------------


async def test_someone_elses_link_looks_exactly_like_a_missing_one(api: Api) -> None:
    mine = await api.account("acme")
    theirs = await api.account("other")
    token = await api.server_token()
    link = (await api.client.post(confirm_url(token.token), headers=mine)).json()
    foreign = await api.client.delete(f"/api/links/{link['id']}", headers=theirs)
    missing = await api.client.delete("/api/links/0123456789abcdef", headers=theirs)
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json() == {"error": "no such link"}
    assert (await api.client.get("/api/links", headers=theirs)).json() == {"links": []}
    assert await api.links.is_workspace_linked("slack", "T1")


async def test_delete_own_link_unlinks_the_workspace(api: Api) -> None:
    auth = await api.account("acme")
    token = await api.server_token()
    link = (await api.client.post(confirm_url(token.token), headers=auth)).json()
    response = await api.client.delete(f"/api/links/{link['id']}", headers=auth)
    assert response.status_code == 200 and response.json() == {"deleted": link["id"]}
    assert not await api.links.is_workspace_linked("slack", "T1")


# -- the HTML page --------------------------------------------------------------------------


async def test_link_page_shows_target_and_a_plain_form(api: Api) -> None:
    token = await api.server_token()
    response = await api.client.get(f"/link/{token.token}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["referrer-policy"] == "no-referrer"
    page = response.text
    assert "Slack workspace T1" in page
    assert f'action="/link/{token.token}"' in page
    assert 'name="api_key"' in page and "<script" not in page


async def test_link_page_form_confirms_with_the_api_key(api: Api) -> None:
    key = await api.accounts.create("acme")
    token = await api.server_token()
    bad = await api.client.post(f"/link/{token.token}", data={"api_key": "sbk_wrong"})
    assert bad.status_code == 401 and "not valid" in bad.text
    good = await api.client.post(f"/link/{token.token}", data={"api_key": key})
    assert good.status_code == 200 and "acme" in good.text
    assert await api.links.is_workspace_linked("slack", "T1")
    again = await api.client.get(f"/link/{token.token}")
    assert again.status_code == 410


async def test_link_page_escapes_names(api: Api) -> None:
    token = await api.links.create_token(
        LinkKind.SERVER,
        platform="slack",
        target_id="T9",
        target_name="<script>alert(1)</script>",
        user_id="U1",
        user_name="<b>eve</b>",
    )
    page = (await api.client.get(f"/link/{token.token}")).text
    assert "<script>alert" not in page and "&lt;script&gt;" in page


async def test_link_page_for_unknown_or_malformed_token(api: Api) -> None:
    assert (await api.client.get("/link/" + "Z" * 43)).status_code == 404
    assert (await api.client.get("/link/" + "Z" * 80)).status_code == 422


# -- ops ------------------------------------------------------------------------------------


async def test_healthz_and_readyz(api: Api) -> None:
    assert (await api.client.get("/healthz")).json() == {"status": "ok"}
    assert (await api.client.get("/readyz")).status_code == 200
    api.ready_flag[0] = False
    not_ready = await api.client.get("/readyz")
    assert not_ready.status_code == 503 and not_ready.json() == {"error": "not ready"}


async def test_metrics_exposes_switchboard_metrics(api: Api) -> None:
    response = await api.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    for name in (
        "switchboard_messages_in_total",
        "switchboard_messages_out_total",
        "switchboard_turn_seconds",
        "switchboard_pending_queue_depth",
        "switchboard_dedupe_hits_total",
        "switchboard_errors_total",
    ):
        assert re.search(rf"^# TYPE {name.removesuffix('_total')}", response.text, re.M), name


async def test_admin_config_needs_the_operator_key_and_masks_secrets(api: Api) -> None:
    assert (await api.client.get("/api/admin/config")).status_code == 401
    wrong = await api.client.get("/api/admin/config", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    user_key = await api.account("acme")
    assert (await api.client.get("/api/admin/config", headers=user_key)).status_code == 401
    response = await api.client.get(
        "/api/admin/config", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert response.status_code == 200
    config = response.json()
    assert config["SWITCHBOARD_ADMIN_KEY"] == "***"
    assert config["OPENAI_API_KEY"] == "***"
    assert config["TELEGRAM_BOT_TOKEN"] == "***"
    assert config["SWITCHBOARD_ACCESS"] == "linked"
    for secret in (ADMIN_KEY, OPENAI_KEY, TELEGRAM_TOKEN):
        assert secret not in response.text


async def test_openapi_document_lists_the_link_api(api: Api) -> None:
    doc = (await api.client.get("/api/openapi.json")).json()
    paths = doc["paths"]
    assert "/api/links/tokens/{token}/confirm" in paths
    assert "/api/links/user-tokens/{token}/confirm" in paths
    assert "delete" in paths["/api/links/{link_id}"]
    assert "/link/{token}" not in paths


async def test_webhook_routes_reach_their_handlers(api: Api) -> None:
    response = await api.client.post("/telegram/webhook", content=b'{"update_id": 1}')
    assert response.status_code == 200
    assert api.webhook_calls == [b'{"update_id": 1}']
    assert (await api.client.get("/telegram/webhook")).status_code == 405


async def test_unknown_route_is_json_404(api: Api) -> None:
    response = await api.client.get("/nope")
    assert response.status_code == 404 and response.json() == {"error": "not found"}


# -- server faults --------------------------------------------------------------------------


async def test_server_fault_is_json_500_with_reference_only(api: Api) -> None:
    async def broken(request: Request) -> Response:
        raise RuntimeError("secret internal detail")

    app = build_http_app(
        settings=api.settings,
        accounts=api.accounts,
        links=api.links,
        ready=_always_ready,
        webhooks={"/slack/events": broken},
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as client:
        response = await client.post("/slack/events", content=b"{}")
    assert response.status_code == 500
    assert re.fullmatch(r"internal error \(ref [0-9a-f]{8}\)", response.json()["error"])
    assert "secret" not in response.text


async def test_unreachable_storage_is_503_not_500(api: Api) -> None:
    dead = connect("redis://127.0.0.1:1/0")
    keys = Keys("dead:")
    app = build_http_app(
        settings=api.settings,
        accounts=Accounts(dead, keys=keys),
        links=Links(dead, keys=keys),
        ready=_always_ready,
    )
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as client:
            response = await client.get("/api/links", headers={"Authorization": "Bearer sbk_x"})
    finally:
        await dead.aclose()
    assert response.status_code == 503
    assert response.json()["error"].startswith("storage unavailable")


async def _always_ready() -> bool:
    return True
