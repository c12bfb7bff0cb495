"""Every module declares its public surface, and every declared name exists (httpx's guard)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import agent
import channels
import service
import storage
import switchboard

_PACKAGES = (switchboard, channels, agent, storage, service)

MODULES = sorted(
    {pkg.__name__ for pkg in _PACKAGES}
    | {
        info.name
        for pkg in _PACKAGES
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}.")
    }
)


@pytest.mark.parametrize("name", MODULES)
def test_module_declares_all_and_every_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert not missing, f"{name}.__all__ names missing attributes: {missing}"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"


def test_layers_export_their_entry_points() -> None:
    for name in ("AgentRuntime", "build_model", "TurnContext", "TurnResult", "Question"):
        assert name in agent.__all__
    for name in (
        "Dedupe",
        "ThreadMap",
        "ThreadLocks",
        "ThreadQueue",
        "Inbox",
        "Orphans",
        "PendingWarnings",
        "PendingQuestions",
        "RedisCheckpointSaver",
        "open_redis",
    ):
        assert name in storage.__all__
