"""The chat texts of access gating and linking, built from plain values (no Redis)."""

from __future__ import annotations

import pytest

from channels.access import (
    already_linked_text,
    gate_notice,
    link_offer_text,
    link_url,
    non_admin_text,
    rate_limited_text,
    unlink_text,
)
from channels.message import Platform
from storage import Link, LinkKind, LinkToken, TokenState, UnlinkResult, UnlinkStatus

TOKEN = LinkToken(
    token="tok_ABC-123",
    kind=LinkKind.SERVER,
    platform="slack",
    target_id="T1",
    target_name="Slack workspace T1",
    user_id="U1",
    user_name="alice",
    created_at=1_800_000_000.0,
    expires_at=1_800_000_000.0 + 1800,
    state=TokenState.PENDING,
)


def test_unlinked_slack_workspace_notice_names_the_workspace_and_who_can_link() -> None:
    text = gate_notice(Platform.SLACK, is_dm=False)
    assert text.startswith("This Slack workspace isn't linked to Switchboard yet")
    assert "a workspace admin can run /link" in text


@pytest.mark.parametrize(
    ("platform", "place", "who"),
    [
        (Platform.DISCORD, "Discord server", "Manage Server"),
        (Platform.TELEGRAM, "Telegram group", "group admin"),
    ],
)
def test_workspace_notice_uses_each_platforms_words(
    platform: Platform, place: str, who: str
) -> None:
    text = gate_notice(platform, is_dm=False)
    assert place in text and who in text and "/link" in text


def test_unlinked_dm_notice_explains_how_to_link() -> None:
    text = gate_notice(Platform.TELEGRAM, is_dm=True)
    assert "Telegram account isn't linked" in text
    assert "Send /link" in text and "API key" in text


def test_link_url_joins_public_url_and_token_without_double_slash() -> None:
    assert link_url("https://sb.example/", "abc") == "https://sb.example/link/abc"
    assert link_url("http://127.0.0.1:8080", "abc") == "http://127.0.0.1:8080/link/abc"


def test_link_offer_shows_url_and_thirty_minute_expiry() -> None:
    text = link_offer_text(
        TOKEN, platform=Platform.SLACK, is_dm=False, public_url="https://sb.example"
    )
    assert "https://sb.example/link/tok_ABC-123" in text
    assert "30 minutes" in text and "UTC" in text
    assert "this Slack workspace" in text
    dm_text = link_offer_text(TOKEN, platform=Platform.SLACK, is_dm=True, public_url="http://x")
    assert "your DMs" in dm_text


def test_non_admin_refusal_is_clear() -> None:
    text = non_admin_text(Platform.DISCORD)
    assert text.startswith("Only someone with Manage Server can link this Discord server")


def test_already_linked_differs_for_workspaces_and_dms() -> None:
    assert "/unlink" in already_linked_text(Platform.SLACK, is_dm=False)
    assert already_linked_text(Platform.TELEGRAM, is_dm=True).startswith(
        "Your Telegram account is already linked"
    )


@pytest.mark.parametrize(
    ("seconds", "expected"), [(30, "1 minute."), (60, "1 minute."), (900, "15 minutes.")]
)
def test_rate_limit_text_rounds_to_minutes(seconds: float, expected: str) -> None:
    assert rate_limited_text(seconds).endswith(expected)


def test_unlink_texts_for_each_outcome() -> None:
    link = Link(
        id="l1",
        account="acme",
        kind=LinkKind.SERVER,
        platform="slack",
        target_id="T1",
        target_name="",
        owner_id="U1",
        owner_name="alice",
        created_at=0.0,
    )
    done = unlink_text(
        UnlinkResult(UnlinkStatus.UNLINKED, link), platform=Platform.SLACK, is_dm=False
    )
    assert done == "This Slack workspace is no longer linked to Switchboard."
    none = unlink_text(UnlinkResult(UnlinkStatus.NOT_LINKED), platform=Platform.SLACK, is_dm=True)
    assert none == "Your Slack account isn't linked to Switchboard."
    refused = unlink_text(
        UnlinkResult(UnlinkStatus.NOT_OWNER, link), platform=Platform.SLACK, is_dm=False
    )
    assert refused.startswith("Only alice can unlink this Slack workspace")
