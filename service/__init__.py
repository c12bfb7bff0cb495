"""Wiring: settings, CLI, the HTTP app and the composition root."""

__all__: list[str] = []
