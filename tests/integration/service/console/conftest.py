"""A real headless Chromium (Debian's, driven by Playwright for Python: nothing is downloaded at
test time) for the console's browser tests, and screenshots of every page a test saw, written
when the test fails."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__: list[str] = []

SCREENSHOTS = Path(__file__).resolve().parents[4] / ".artifacts" / "console-screenshots"


def system_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """Remember each phase's outcome on the item, so a fixture can tell that its test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    executable = system_chromium()
    if executable is None:
        pytest.skip("no Chromium installed (apt-get install chromium); .ci/run installs it")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            await launched.close()


class Shots:
    """Screenshots taken after each step of a test, kept in memory until it fails."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.taken: list[tuple[str, bytes]] = []

    async def take(self, label: str) -> None:
        self.taken.append((label, await self.page.screenshot(full_page=True)))

    def save(self, test_name: str) -> Path:
        folder = SCREENSHOTS / re.sub(r"[^A-Za-z0-9_.-]", "_", test_name)
        folder.mkdir(parents=True, exist_ok=True)
        for n, (label, png) in enumerate(self.taken, 1):
            (folder / f"{n:02d}-{re.sub(r'[^A-Za-z0-9_-]', '_', label)}.png").write_bytes(png)
        return folder


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "javascript_off: the test's browser page runs with JavaScript disabled"
    )


@pytest.fixture
async def page(browser: Any, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """A fresh browser context (no cookies) and its page; without JavaScript when the test is
    marked `javascript_off`."""
    javascript = request.node.get_closest_marker("javascript_off") is None
    context = await browser.new_context(java_script_enabled=javascript)
    opened = await context.new_page()
    opened.set_default_timeout(15_000)
    try:
        yield opened
    finally:
        await context.close()


@pytest.fixture
async def shots(page: Any, request: pytest.FixtureRequest) -> AsyncIterator[Shots]:
    """On failure, every page the test took a shot of and the last state are saved under
    .artifacts/console-screenshots/<test>/ (the path is printed with the failure)."""
    taken = Shots(page)
    yield taken
    call = getattr(request.node, "report_call", None)
    if call is not None and call.failed:
        with contextlib.suppress(Exception):  # a crashed page still leaves the earlier shots
            await taken.take("at-failure")
        print(f"console screenshots: {taken.save(request.node.name)}")
