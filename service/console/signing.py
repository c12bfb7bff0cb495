"""What the console's cookies and forms carry, signed with a secret derived from the admin key.

The session cookie is `<session id>.<mac>`: a forged or altered cookie is refused before Redis is
asked (`storage.ConsoleSessions` holds the session itself, for expiry and logout). A form's CSRF
token is the MAC of the session id under another label, so it cannot be made without the secret
and is worthless for any other session; the login form, sent before a session exists, binds its
token to a random cookie of its own instead. Changing the admin key invalidates all of them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["Signer"]

_LABEL = b"switchboard operator console v1"


class Signer:
    def __init__(self, admin_key: str) -> None:
        self._secret = hmac.new(admin_key.encode(), _LABEL, hashlib.sha256).digest()

    def _mac(self, purpose: str, value: str) -> str:
        digest = hmac.new(self._secret, f"{purpose}|{value}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def _same(self, expected: str, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(expected.encode(), given.encode())

    def session_cookie(self, session_id: str) -> str:
        return f"{session_id}.{self._mac('session', session_id)}"

    def session_id(self, cookie: str | None) -> str | None:
        """The session id a cookie names, if its signature holds."""
        session_id, _, mac = (cookie or "").rpartition(".")
        if session_id and self._same(self._mac("session", session_id), mac):
            return session_id
        return None

    def csrf(self, session_id: str) -> str:
        return self._mac("csrf", session_id)

    def csrf_ok(self, session_id: str, given: str | None) -> bool:
        return self._same(self.csrf(session_id), given)

    @staticmethod
    def login_nonce() -> str:
        return secrets.token_urlsafe(18)

    def login_csrf(self, nonce: str) -> str:
        return self._mac("login", nonce)

    def login_csrf_ok(self, nonce: str | None, given: str | None) -> bool:
        return bool(nonce) and self._same(self._mac("login", nonce or ""), given)
