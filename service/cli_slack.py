"""`switchboard slack manifest`: print a ready Slack app manifest (YAML) for these settings.

Paste it at api.slack.com/apps → Create New App → From an app manifest. Socket Mode unless told
otherwise or only SLACK_SIGNING_SECRET is set; the Events API variant points at
SWITCHBOARD_PUBLIC_URL, which Slack must reach over HTTPS.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from service.settings import Settings, load_settings
from switchboard.errors import ConfigError

__all__ = ["add_slack_commands", "manifest_yaml"]


def add_slack_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    slack = subparsers.add_parser("slack", help="Slack app set-up")
    sub = slack.add_subparsers(dest="slack_command", metavar="COMMAND", required=True)
    manifest = sub.add_parser(
        "manifest", help="print the Slack app manifest (YAML) for these settings"
    )
    mode = manifest.add_mutually_exclusive_group()
    mode.add_argument(
        "--socket-mode", action="store_true", help="Socket Mode (SLACK_APP_TOKEN; no public URL)"
    )
    mode.add_argument(
        "--events-api",
        action="store_true",
        help="the Events API at SWITCHBOARD_PUBLIC_URL (SLACK_SIGNING_SECRET)",
    )
    manifest.add_argument("--name", default="Switchboard", help="the app's and bot's name")
    manifest.set_defaults(func=_print_manifest)


def _events_api(settings: Settings, args: argparse.Namespace) -> bool:
    if args.events_api or args.socket_mode:
        return bool(args.events_api)
    return settings.slack_signing_secret is not None and settings.slack_app_token is None


def manifest_yaml(settings: Settings, *, name: str = "Switchboard", events_api: bool) -> str:
    from channels.slack.manifest import app_manifest

    data = app_manifest(
        name=name,
        command=settings.slack_command,
        public_url=settings.public_url if events_api else None,
    )
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _print_manifest(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    events_api = _events_api(settings, args)
    if events_api and not settings.public_url.startswith("https://"):
        print(
            f"switchboard: SWITCHBOARD_PUBLIC_URL is {settings.public_url}; Slack sends events "
            "only to a public https:// URL (or use --socket-mode)",
            file=sys.stderr,
        )
    sys.stdout.write(manifest_yaml(settings, name=args.name, events_api=events_api))
    return 0
