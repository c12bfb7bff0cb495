"""Chat channels: the normalised message model, one adapter per platform, the manager."""

__all__: list[str] = []
