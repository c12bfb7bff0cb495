"""Refuse to run beside another distribution that owns one of our generic top-level packages.

`channels`, `agent`, `storage` and `service` are common names (Django Channels ships `channels`).
Installed into a shared site-packages, one distribution silently overwrites the other's files, and
the failure shows up far from its cause. Switchboard belongs in its own environment; this check
turns the clash into one clear line at start-up.
"""

from __future__ import annotations

import importlib.metadata as metadata
from collections.abc import Mapping, Sequence

__all__ = ["OUR_PACKAGES", "shadowing_problem"]

OUR_PACKAGES = ("switchboard", "channels", "agent", "storage", "service")
_OUR_DISTRIBUTION = "switchboard"


def shadowing_problem(
    distributions: Mapping[str, Sequence[str]] | None = None,
) -> str | None:
    """One line naming the clash, or None when every package of ours is ours alone."""
    owners = metadata.packages_distributions() if distributions is None else distributions
    clashes = []
    for package in OUR_PACKAGES:
        others = sorted(
            {d for d in owners.get(package, ()) if d.lower().replace("_", "-") != _OUR_DISTRIBUTION}
        )
        if others:
            clashes.append(f"{package!r} (also installed by {', '.join(others)})")
    if not clashes:
        return None
    return (
        f"another installed distribution provides {'; '.join(clashes)}: install Switchboard "
        "into its own environment (make install, the Docker image or `uv tool install`)"
    )
