"""Replies as text: this package's clients keep replies as bytes (`decode_responses` is off, for
the binary checkpoints), but redis-py types every reply as bytes or str."""

from __future__ import annotations

__all__ = ["as_text"]


def as_text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
