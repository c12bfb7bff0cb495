"""The operator console in a real headless Chromium, against the whole service as `switchboard
serve` runs it: real Redis, Telegram polling a fake Bot API on loopback, the demo model.

An admin who never opens a shell logs in, sees the live platforms, creates an account and sees
its key once, confirms a link token a user asked for with /link in Telegram, finds the failure
behind a user's "(ref …)", and resets a user's budget; a forged form and an ended session
change nothing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from service.app import Core, running_service
from service.settings import Settings
from storage import Accounts, Keys, Links, UsageLedger
from tests.fakes.telegram_server import TOKEN, FakeTelegram
from tests.integration.service.console.conftest import Shots
from tests.support import free_port, wait_until

ADMIN_KEY = "console-browser-admin-key-0123456789"
ANN = FakeTelegram.user(7, "Ann")


@dataclass
class Service:
    core: Core
    telegram: FakeTelegram
    url: str


@pytest.fixture
async def service(redis_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[Service]:
    telegram = FakeTelegram()
    await telegram.start()
    port = free_port()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=tmp_path,
        http_port=port,
        public_url=f"http://127.0.0.1:{port}",
        admin_key=ADMIN_KEY,
        access="linked",
        telegram_bot_token=TOKEN,
        telegram_api_base=telegram.base_url,
    )
    try:
        async with running_service(settings) as core:
            yield Service(core, telegram, f"http://127.0.0.1:{port}")
    finally:
        await telegram.stop()


async def log_in(page: Any, shots: Shots, url: str, key: str = ADMIN_KEY) -> None:
    await page.goto(f"{url}/admin")
    await shots.take("login")
    await page.get_by_label("Admin key").fill(key)
    await page.get_by_role("button", name="Log in").click()
    await shots.take("after-login")


@pytest.mark.javascript_off  # every action is a plain form: nothing needs a script
async def test_admin_does_every_task_from_the_browser(
    service: Service, page: Any, shots: Shots, redis: aioredis.Redis, keys: Keys
) -> None:
    tg, url = service.telegram, service.url
    await wait_until(lambda: all(o.owner for o in service.core.owners))  # the poller is up

    await log_in(page, shots, url)
    assert await page.title() == "Overview · Switchboard console"
    platforms = page.get_by_role("table").first
    assert re.search(r"telegram\s+running", await platforms.inner_text())
    assert "this process" in await page.locator("main").inner_text()  # holds the poller lease
    assert "noeviction" in await page.locator("main").inner_text()

    # An account, its key shown once.
    await page.get_by_role("link", name="Accounts").click()
    await page.get_by_label("Account name").fill("acme")
    await page.get_by_role("button", name="Create account").click()
    await shots.take("account-created")
    key = (await page.locator("#api-key").inner_text()).strip()
    assert await Accounts(redis, keys=keys).authenticate(key) is not None
    await page.goto(f"{url}/admin/accounts")
    await shots.take("accounts-again")
    assert key not in await page.content()
    assert "acme" in await page.locator("table").inner_text()

    # A user asks for a link in Telegram; the admin confirms it.
    tg.say(tg.dm(ANN), ANN, "/link")
    link_url = await wait_until(
        lambda: next(
            (
                m.group(0)
                for t in tg.bot_texts(ANN["id"])
                if (m := re.search(r"http\S+/link/\S+", t))
            ),
            None,
        )
    )
    await page.get_by_role("link", name="Links").click()
    await page.get_by_label("Link URL or token").fill(link_url)
    await page.get_by_label("For account").select_option("acme")
    await page.get_by_role("button", name="Confirm link").click()
    await shots.take("link-confirmed")
    assert "Linked Ann" in await page.get_by_role("status").inner_text()
    assert await Links(redis, keys=keys).is_user_linked("telegram", str(ANN["id"]))

    # Now served, Ann's turn fails; the admin finds it by the reference she was given.
    tg.say(tg.dm(ANN), ANN, "boom")
    ref = await wait_until(
        lambda: next(
            (m.group(1) for t in tg.bot_texts(ANN["id"]) if (m := re.search(r"\(ref (\w+)\)", t))),
            None,
        )
    )
    await page.get_by_role("link", name="Failures").click()
    await page.get_by_label("Reference id").fill(f"(ref {ref})")
    await page.get_by_role("button", name="Find").click()
    await shots.take("failure-found")
    row = await page.locator("tbody tr").all_inner_texts()
    assert len(row) == 1 and ref in row[0] and "telegram" in row[0] and str(ANN["id"]) in row[0]

    # The overview now tells when Telegram last brought a message.
    await page.get_by_role("link", name="Overview").click()
    assert re.search(r"telegram\s+running\s+\d{4}-\d\d-\d\d", await platforms.inner_text())

    # Her conversation is listed, and its turns open from it.
    await page.get_by_role("link", name="Conversations").click()
    await page.get_by_role("link", name=f"tg:{ANN['id']}").click()
    await shots.take("conversation")
    assert "Recent turns" in await page.locator("main").inner_text()

    # Ann spent a quarter today; the admin resets it.
    ledger = UsageLedger(redis, keys=keys)
    await ledger.record("telegram", str(ANN["id"]), "turn-console", 250_000)
    await page.get_by_role("link", name="Usage").click()
    await page.get_by_label("Platform", exact=True).select_option("telegram")
    await page.get_by_label("User id on that platform").fill(str(ANN["id"]))
    await page.get_by_role("button", name="Show usage").click()
    await shots.take("usage")
    assert (await page.locator("#spent-1").inner_text()).strip() == "0.2500"
    await page.get_by_role("button", name="Reset").click()
    await shots.take("usage-reset")
    assert "spend reset" in await page.get_by_role("status").inner_text()
    assert (await page.locator("#spent-1").inner_text()).strip() == "0.0000"
    assert (await ledger.snapshot("telegram", str(ANN["id"]))).daily_micros == 0


async def test_a_forged_form_and_an_ended_session_change_nothing(
    service: Service, page: Any, shots: Shots, redis: aioredis.Redis, keys: Keys
) -> None:
    url = service.url
    await log_in(page, shots, url)
    await page.goto(f"{url}/admin/accounts")

    # The form's CSRF token forged in the page: refused, no account made.
    await page.locator('form[action="/admin/accounts"] input[name=csrf]').first.evaluate(
        "input => { input.value = 'forged-token' }"
    )
    await page.get_by_label("Account name").fill("forged")
    await page.get_by_role("button", name="Create account").click()
    await shots.take("forged-refused")
    assert await page.title() == "Form refused · Switchboard console"
    assert await Accounts(redis, keys=keys).get("forged") is None

    # The session expires in Redis while the page is open: the next form is refused, the next
    # page asks for the key again.
    await page.goto(f"{url}/admin/accounts")
    for session in [k async for k in redis.scan_iter(match=f"{keys.prefix}console:*")]:
        await redis.pexpire(session, 1)
    await wait_until(lambda: _no_sessions(redis, keys))
    await page.get_by_label("Account name").fill("late")
    await page.get_by_role("button", name="Create account").click()
    await shots.take("expired-refused")
    assert await page.title() == "Session ended · Switchboard console"
    assert await Accounts(redis, keys=keys).get("late") is None
    await page.goto(f"{url}/admin")
    await shots.take("back-to-login")
    assert await page.title() == "Log in · Switchboard console"
    assert "session has ended" in await page.locator("main").inner_text()


async def _no_sessions(redis: aioredis.Redis, keys: Keys) -> bool:
    return not [k async for k in redis.scan_iter(match=f"{keys.prefix}console:*")]


_UNLABELLED = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
    .filter(el => el.labels.length === 0 && !el.getAttribute('aria-label') && !el.textContent.trim())
    .map(el => el.outerHTML)"""


async def test_every_control_has_a_label_and_the_console_works_by_keyboard(
    service: Service, page: Any, shots: Shots
) -> None:
    url = service.url
    await page.goto(f"{url}/admin")
    # the key field takes the focus by itself (autofocus), which may land just after `load`
    await page.wait_for_function("document.activeElement?.id === 'admin_key'")
    await page.keyboard.type(ADMIN_KEY)
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{url}/admin")
    await shots.take("keyboard-login")
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Skip to content"
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Conversations"
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{url}/admin/conversations")
    for path in (
        "",
        "/conversations",
        "/failures",
        "/accounts",
        "/links",
        "/usage",
        "/feedback",
        "/mcp",
    ):
        await page.goto(f"{url}/admin{path}")
        await shots.take(f"labels{path.replace('/', '-')}")
        assert await page.evaluate(_UNLABELLED) == [], path
