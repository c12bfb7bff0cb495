"""The Slack app manifest (`switchboard slack manifest`): what this adapter needs from a Slack app,
so setting one up is "Create New App → From a manifest" and one paste.

Scopes follow the Web API methods the adapter calls (`METHOD_SCOPES`; a unit test finds every
call in `channels/slack/` and fails when one is missing here) plus what the events and the slash
command need. Socket Mode needs no public URL; the Events API points events and interactivity at
`/slack/events` and the slash command at `/slack/commands`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from channels.commands import COMMANDS, DEFAULT_SLACK_COMMAND

__all__ = [
    "BOT_EVENTS",
    "BOT_SCOPES",
    "EVENT_SCOPES",
    "METHOD_SCOPES",
    "USED_METHODS",
    "app_manifest",
]

_HISTORY = ("channels:history", "groups:history", "im:history")
_READ = ("channels:read", "groups:read", "im:read")

METHOD_SCOPES: Mapping[str, tuple[str, ...]] = {
    "auth.test": (),
    "apps.connections.open": (),  # the app-level token's connections:write, not a bot scope
    "chat.postMessage": ("chat:write",),
    "chat.postEphemeral": ("chat:write",),
    "chat.update": ("chat:write",),
    "chat.delete": ("chat:write",),
    "chat.startStream": ("chat:write",),
    "chat.appendStream": ("chat:write",),
    "chat.stopStream": ("chat:write",),
    "reactions.add": ("reactions:write",),
    "reactions.remove": ("reactions:write",),
    "users.info": ("users:read",),
    "bots.info": ("users:read",),
    "team.info": ("team:read",),
    "files.info": ("files:read",),
    "files.upload.v2": ("files:write",),  # files.getUploadURLExternal + completeUploadExternal
    "conversations.history": _HISTORY,
    "conversations.replies": _HISTORY,
    "conversations.info": _READ,
    "conversations.members": _READ,
    "assistant.threads.setStatus": ("assistant:write",),
    "assistant.threads.setSuggestedPrompts": ("assistant:write",),
    "assistant.threads.setTitle": ("assistant:write",),
    "views.publish": (),  # the App Home tab
    "agents.sessions.setStatus": ("chat:write",),  # an agent app's sessions (`sessions.py`)
}
"""Bot scopes per Web API method, for the conversations served: public and private channels and
DMs (`files:read` also covers downloading a file's `url_private` with the bot token)."""

BOT_EVENTS = (
    "agent_session_stopped",
    "app_home_opened",
    "app_mention",
    "assistant_thread_started",
    "message.channels",
    "message.groups",
    "message.im",
)
EVENT_SCOPES: Mapping[str, tuple[str, ...]] = {
    "agent_session_stopped": ("assistant:write",),  # Slack's Stop on an agent session
    "app_home_opened": (),  # the App Home tab, and the agent view's messages tab
    "assistant_thread_started": ("assistant:write",),
    "app_mention": ("app_mentions:read",),
    "message.channels": ("channels:history",),
    "message.groups": ("groups:history",),
    "message.im": ("im:history",),
}

USED_METHODS = (
    "auth.test",
    "apps.connections.open",
    "chat.postMessage",
    "chat.postEphemeral",
    "chat.update",
    "chat.delete",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "reactions.add",
    "users.info",
    "agents.sessions.setStatus",
    "assistant.threads.setStatus",
    "assistant.threads.setSuggestedPrompts",
    "assistant.threads.setTitle",
    "views.publish",
    "files.info",
    "files.upload.v2",
    "conversations.history",
    "conversations.replies",
)
"""The methods the adapter calls (the unit test keeps this list complete)."""


def _scopes() -> tuple[str, ...]:
    # the slash command; downloads of url_private; the assistant view below
    wanted = {"commands", "files:read", "assistant:write"}
    for method in USED_METHODS:
        wanted.update(METHOD_SCOPES[method])
    for event in BOT_EVENTS:
        wanted.update(EVENT_SCOPES[event])
    return tuple(sorted(wanted))


BOT_SCOPES = _scopes()
"""Every bot scope the manifest asks for."""


def app_manifest(
    *,
    name: str = "Switchboard",
    command: str = DEFAULT_SLACK_COMMAND,
    public_url: str | None = None,
) -> dict[str, Any]:
    """The manifest as data (YAML or JSON alike). `public_url` None: Socket Mode (needs
    SLACK_APP_TOKEN); otherwise the Events API at that base (needs SLACK_SIGNING_SECRET)."""
    command = "/" + command.lstrip("/")
    base = public_url.rstrip("/") if public_url else None
    names = " | ".join(str(spec.name) for spec in COMMANDS)
    slash: dict[str, Any] = {
        "command": command,
        "description": "Switchboard: " + ", ".join(str(spec.name) for spec in COMMANDS),
        "usage_hint": names,
        "should_escape": False,
    }
    events: dict[str, Any] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, Any] = {"is_enabled": True}  # question buttons
    if base is not None:
        slash["url"] = f"{base}/slack/commands"
        events["request_url"] = f"{base}/slack/events"
        interactivity["request_url"] = f"{base}/slack/events"
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {
            "name": name,
            "description": "An AI assistant: mention it in a channel, or DM it.",
        },
        "features": {
            "app_home": {
                "home_tab_enabled": True,  # what I do, your link and usage, the commands
                "messages_tab_enabled": True,  # DMs with the app
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": name, "always_online": True},
            "assistant_view": {  # Slack's AI-app surface: replies stream as they are written
                "assistant_description": f"{name} answers in this pane, in DMs and in threads.",
            },
            "slash_commands": [slash],
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": base is None,
            "token_rotation_enabled": False,
        },
    }
