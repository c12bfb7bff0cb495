"""The Slack app manifest asks for every scope the adapter's calls and events need."""

from __future__ import annotations

import re
from pathlib import Path

from channels.commands import COMMANDS
from channels.slack.manifest import (
    BOT_EVENTS,
    BOT_SCOPES,
    EVENT_SCOPES,
    METHOD_SCOPES,
    USED_METHODS,
    app_manifest,
)

SLACK_PACKAGE = Path(__file__).resolve().parents[4] / "channels" / "slack"
_CALL = re.compile(r"_client\.([a-z]+(?:_[A-Za-z0-9]+)+)\s*[(,)]")  # a call, or passed on
_FAMILIES = frozenset(
    [
        "apps",
        "assistant",
        "auth",
        "bookmarks",
        "bots",
        "calls",
        "canvases",
        "chat",
        "conversations",
        "dnd",
        "emoji",
        "files",
        "pins",
        "reactions",
        "reminders",
        "search",
        "stars",
        "team",
        "usergroups",
        "users",
        "views",
        "workflows",
    ]
)  # Web API method families (`base_url` and other client attributes are not methods)


def _methods_called() -> set[str]:
    """Web API methods the adapter's code calls (`chat_postMessage` is `chat.postMessage`)."""
    found: set[str] = set()
    for source in SLACK_PACKAGE.glob("*.py"):
        for name in _CALL.findall(source.read_text(encoding="utf-8")):
            if name.split("_", 1)[0] not in _FAMILIES:
                continue
            found.add("files.upload.v2" if name == "files_upload_v2" else name.replace("_", "."))
    return found


def test_every_web_api_call_in_the_adapter_is_listed_with_its_scopes() -> None:
    called = _methods_called()
    assert {"chat.postMessage", "chat.postEphemeral", "users.info"} <= called  # the scan works
    missing = called - set(USED_METHODS)
    assert not missing, f"add to USED_METHODS (and METHOD_SCOPES): {sorted(missing)}"
    for method in USED_METHODS:
        assert set(METHOD_SCOPES[method]) <= set(BOT_SCOPES), method


def test_events_the_adapter_listens_to_are_subscribed_with_their_scopes() -> None:
    adapter = (SLACK_PACKAGE / "adapter.py").read_text(encoding="utf-8")
    listened = set(re.findall(r'self\._app\.event\("([a-z_]+)"\)', adapter))
    assert listened == {
        "app_mention",
        "message",
        "assistant_thread_started",
        "app_home_opened",
        "agent_session_stopped",
    }
    assert {"app_mention", "assistant_thread_started", "app_home_opened"} <= set(BOT_EVENTS)
    assert {"message.im", "message.channels", "message.groups"} <= set(BOT_EVENTS)
    for event in BOT_EVENTS:
        assert set(EVENT_SCOPES[event]) <= set(BOT_SCOPES)


def test_the_manifest_turns_on_the_ai_app_surfaces() -> None:
    features = app_manifest()["features"]
    assert features["app_home"]["home_tab_enabled"] is True
    assert features["app_home"]["messages_tab_enabled"] is True
    assert "assistant_view" in features
    assert "assistant:write" in BOT_SCOPES


def test_socket_mode_manifest_has_no_urls_and_names_the_one_command() -> None:
    manifest = app_manifest(command="sb")
    [slash] = manifest["features"]["slash_commands"]
    assert slash["command"] == "/sb" and "url" not in slash
    assert all(str(spec.name) in slash["usage_hint"] for spec in COMMANDS)
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    assert "request_url" not in settings["event_subscriptions"]
    assert settings["interactivity"] == {"is_enabled": True}
    assert {"commands", "files:read", "files:write"} <= set(BOT_SCOPES)


def test_events_api_manifest_points_at_the_service_routes() -> None:
    manifest = app_manifest(public_url="https://sb.example.com/")
    assert manifest["features"]["slash_commands"][0]["url"] == (
        "https://sb.example.com/slack/commands"
    )
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["request_url"] == "https://sb.example.com/slack/events"
    assert settings["interactivity"]["request_url"] == "https://sb.example.com/slack/events"
    assert settings["socket_mode_enabled"] is False
