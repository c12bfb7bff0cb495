"""`switchboard` command line: serve (default), console, and the admin commands.

Start-up failures (bad settings, an unreachable Redis, a data dir in use) print one line and exit
with status 2; a traceback is never the user interface.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog

from service.logging import configure_logging
from service.settings import Settings, load_settings
from service.shadowing import shadowing_problem
from switchboard import __version__
from switchboard.errors import SwitchboardError

__all__ = ["main"]

_log = structlog.get_logger(__name__)

CONSOLE_TURN_TIMEOUT_S = 900.0  # longer than any turn (the manager times turns out at 600 s)


def _secrets(settings: Settings) -> list[str]:
    values = [
        settings.openai_api_key,
        settings.anthropic_api_key,
        settings.admin_key,
        settings.telegram_bot_token,
        settings.telegram_webhook_secret,
        settings.slack_bot_token,
        settings.slack_app_token,
        settings.slack_signing_secret,
        settings.discord_bot_token,
    ]
    return [v.get_secret_value() for v in values if v is not None]


async def _serve(settings: Settings) -> None:
    from service.app import running_service, wait_for_signal

    async with running_service(settings):
        await wait_for_signal()


async def _console(settings: Settings) -> None:
    from channels import InboundMessage
    from channels.console import ConsoleAdapter
    from service.app import running_service

    async with running_service(settings, http=False) as core:
        manager = core.manager

        async def deliver_and_answer(msg: InboundMessage) -> None:
            """A terminal is a conversation in turns: the prompt returns with the answer."""
            await manager.deliver(msg)
            await manager.idle(timeout=CONSOLE_TURN_TIMEOUT_S)

        console = ConsoleAdapter(deliver=deliver_and_answer)
        core.manager.register(console)
        console.use_data_dir(settings.data_dir)
        await console.start()
        await console.run()


def _loop_factory(settings: Settings) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where asked for and installed (it is not on Windows); else the standard loop."""
    if settings.event_loop != "uvloop":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _run(coro_factory: Callable[[Settings], Coroutine[Any, Any, None]], settings: Settings) -> int:
    try:
        with asyncio.Runner(loop_factory=_loop_factory(settings)) as runner:
            runner.run(coro_factory(settings))
    except SwitchboardError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="switchboard",
        description="Chat with one LangGraph agent from Slack, Telegram, Discord.",
    )
    parser.add_argument("--version", action="version", version=f"switchboard {__version__}")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="serve the configured platforms and the HTTP API")
    serve.add_argument(
        "--role",
        choices=("all", "ingress", "worker"),
        help="ingress: receive and queue; worker: answer from the inbox; all: both "
        "(default: SWITCHBOARD_ROLE, else all)",
    )
    sub.add_parser("console", help="chat with the agent in this terminal")
    with contextlib.suppress(ImportError):
        from service.cli_admin import add_admin_commands

        add_admin_commands(sub)
    from service.cli_bindings import add_bindings_commands
    from service.cli_slack import add_slack_commands
    from service.cli_store import add_store_commands

    add_bindings_commands(sub)
    add_slack_commands(sub)
    add_store_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    problem = shadowing_problem()
    if problem is not None:
        print(f"switchboard: {problem}", file=sys.stderr)
        return 2
    try:
        settings = load_settings()
    except SwitchboardError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    command = args.command
    if command is None:
        command = "serve" if settings.any_platform or not sys.stdin.isatty() else "console"
    if command == "console":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        with open(settings.data_dir / "console.log", "a", encoding="utf-8") as log_file:
            configure_logging(
                level=settings.log_level,
                fmt=settings.log_format,
                secrets=_secrets(settings),
                stream=log_file,
            )
            return _run(_console, settings)
    configure_logging(level=settings.log_level, fmt=settings.log_format, secrets=_secrets(settings))
    if command == "serve":
        if getattr(args, "role", None):
            settings = settings.model_copy(update={"role": args.role})
        return _run(_serve, settings)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
