"""Every key group that one Lua script or MULTI touches hashes to one Redis Cluster slot.

A cluster refuses a script whose keys span slots (CROSSSLOT); the single-node suites would never
notice, so the groups are pinned here from `Keys` itself. CI's cluster pass runs the scripts.
"""

from __future__ import annotations

from redis.crc import key_slot

from storage import Keys
from storage.checkpoint import _SUFFIXES

__all__: list[str] = []

K = Keys("sb:")


def _one_slot(keys: list[str]) -> bool:
    return len({key_slot(k.encode()) for k in keys}) == 1


def test_a_threads_keys_share_one_slot() -> None:
    t = "0123456789abcdef0123456789abcdef"
    group = [K.lock(t), K.stop(t), K.question(t), K.pending_warnings(t), K.remote_thread(t)]
    group += [K.thread(t, s) for s in ("q", "qmsg", "done", "tries", "ledger")]
    group += [K.checkpoint(t, s) for s in _SUFFIXES]
    assert _one_slot(group)


def test_accounts_api_keys_link_tokens_and_links_share_the_access_slot() -> None:
    group = [
        K.account("acme"),
        K.accounts(),
        K.api_key("ab" * 32),
        K.link_token("tok"),
        K.link_pending("server", "slack", "T1"),
        K.link_rate("ws", "slack", "T1"),
        K.link_rate("user", "telegram", "42"),
        K.link("L1"),
        K.linked("user", "telegram", "42"),
        K.account_links("acme"),
        K.links_index(),
    ]
    assert _one_slot(group)
    assert all("{access}" in key for key in group)


def test_per_sender_per_user_and_per_message_groups_share_a_slot() -> None:
    assert _one_slot([K.rate("telegram", "42"), K.rate_notice("telegram", "42")])
    assert _one_slot(
        [
            K.usage_day("telegram", "42", "2026-01-01"),
            K.usage_week("telegram", "42", "2026-W01"),
            K.usage_turn("telegram", "42", "turn-1"),
            K.usage_limits("telegram", "42"),
        ]
    )
    assert _one_slot([K.dedupe("slack", pid, "C1") for pid in ("Ev1", "C1:1.0", "client-9")])
    assert _one_slot([K.dedupe("slack", pid, "") for pid in ("Ev1", "Ev2")])


def test_different_threads_and_users_spread_over_slots() -> None:
    """The tags are per thread and per user, not one global tag: load spreads over the nodes."""
    threads = {key_slot(K.lock(f"{i:032x}").encode()) for i in range(50)}
    users = {key_slot(K.rate("telegram", str(i)).encode()) for i in range(50)}
    assert len(threads) > 40 and len(users) > 40
