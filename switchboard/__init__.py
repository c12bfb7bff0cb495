"""Switchboard: one LangGraph agent, reachable from Slack, Telegram, Discord and a terminal."""

__all__ = ["__version__"]

__version__ = "0.1.0"
