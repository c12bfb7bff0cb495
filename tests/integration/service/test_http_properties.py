"""Property: no client input (token, id, method, headers, body) makes the HTTP app answer 500."""

from __future__ import annotations

import json
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.service.conftest import ADMIN_KEY, Api

_segments = st.one_of(
    st.text(max_size=80),
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", max_size=90
    ),
    st.sampled_from(["", ".", "..", "%", "%00", "a/b", "\x00", "🙂", "A" * 64, "A" * 65]),
)
_templates = st.sampled_from(
    [
        "/api/links/tokens/{}",
        "/api/links/tokens/{}/confirm",
        "/api/links/user-tokens/{}/confirm",
        "/api/links/{}",
        "/api/links",
        "/link/{}",
        "/api/admin/config",
        "/healthz",
        "/readyz",
        "/metrics",
        "/telegram/webhook",
        "/{}",
    ]
)
_ascii_header = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=200
)
_bodies = st.one_of(
    st.binary(max_size=300),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=10,
    ).map(lambda doc: json.dumps(doc).encode()),
)
_content_types = st.sampled_from(
    [
        None,
        "application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=xyz",
        "multipart/form-data",
        "text/plain; charset=utf-8",
    ]
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]),
    template=_templates,
    segment=_segments,
    auth=st.one_of(st.none(), _ascii_header, st.just("valid"), st.just("admin")),
    body=_bodies,
    content_type=_content_types,
)
async def test_random_requests_never_get_a_500(
    api: Api,
    method: str,
    template: str,
    segment: str,
    auth: str | None,
    body: bytes,
    content_type: str | None,
) -> None:
    headers: dict[str, str] = {}
    if auth == "valid":
        headers.update(await api.account("prop"))
    elif auth == "admin":
        headers["Authorization"] = f"Bearer {ADMIN_KEY}"
    elif auth is not None:
        headers["Authorization"] = auth
    if content_type is not None:
        headers["Content-Type"] = content_type
    path = template.format(quote(segment, safe=""))
    response = await api.client.request(method, path, headers=headers, content=body)
    assert response.status_code < 500, (method, path, response.status_code, response.text)
    if path.startswith("/api/") and response.status_code >= 400 and method != "HEAD":
        assert set(response.json()) == {"error"}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=_bodies, content_type=_content_types, use_real_token=st.booleans())
async def test_random_bodies_on_live_tokens_never_get_a_500(
    api: Api, body: bytes, content_type: str | None, use_real_token: bool
) -> None:
    token = (await api.server_token()).token if use_real_token else "Q" * 43
    headers = {"Content-Type": content_type} if content_type else {}
    for path in (f"/link/{token}", f"/api/links/tokens/{token}/confirm"):
        response = await api.client.post(path, headers=headers, content=body)
        assert response.status_code < 500, (path, response.status_code, response.text)
