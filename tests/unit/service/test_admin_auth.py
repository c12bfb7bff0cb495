"""The admin key check: wrong keys are counted per client address and locked out for a while."""

from __future__ import annotations

from structlog.testing import capture_logs

from service.admin_auth import AdminAuth, Verdict

KEY = "right-admin-key-0123456789abcdef"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_eleventh_wrong_key_in_a_minute_locks_the_address_out_even_with_the_right_key() -> None:
    clock = Clock()
    auth = AdminAuth(KEY, limit=10, window_s=60, clock=clock)
    for _ in range(10):
        assert auth.check("guess", client="10.0.0.9").verdict is Verdict.WRONG
        clock.now += 1
    limited = auth.check(KEY, client="10.0.0.9")
    assert limited.verdict is Verdict.LIMITED
    assert limited.retry_after_s == 50  # until the first wrong key leaves the window
    assert auth.check(KEY, client="10.0.0.10").verdict is Verdict.OK  # others are not affected
    clock.now += 50
    assert auth.check(KEY, client="10.0.0.9").verdict is Verdict.OK


def test_a_request_without_a_key_is_not_counted_as_a_guess() -> None:
    auth = AdminAuth(KEY, limit=2, clock=Clock())
    for _ in range(5):
        assert auth.check(None, client="10.0.0.9").verdict is Verdict.MISSING
    assert auth.check(KEY, client="10.0.0.9").verdict is Verdict.OK


def test_no_configured_key_means_the_admin_api_is_off() -> None:
    assert AdminAuth("").check(KEY, client="10.0.0.9").verdict is Verdict.DISABLED


def test_wrong_keys_are_logged_with_the_address_and_never_the_key() -> None:
    auth = AdminAuth(KEY, limit=1, clock=Clock())
    with capture_logs() as logs:
        auth.check("a-guessed-key-value", client="10.0.0.9", route="/api/admin/mcp")
        auth.check(KEY, client="10.0.0.9", route="/api/admin/mcp")
    assert [e["event"] for e in logs] == ["admin.auth_failed", "admin.auth_limited"]
    assert logs[0]["client"] == "10.0.0.9" and logs[0]["route"] == "/api/admin/mcp"
    assert "a-guessed-key-value" not in str(logs) and KEY not in str(logs)
