"""Every key the service leaves in Redis expires or has a documented bound.

The whole service runs as `switchboard serve` does, with all three platforms on their fakes; a
soak drives what leaves state behind (conversations on every platform, a question left open, a
queue behind a slow turn, a link token, an account, a user's usage limits, a file sent and one
received, budgets in force); then every key under the prefix is listed, and a key without a TTL
must belong to a family `storage.key_families` documents a bound for."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from service.app import running_service
from storage import Accounts, Keys, connect
from storage.key_families import family_of, scan_keys
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.sample_files import png_bytes
from tests.fakes.slack_server import FakeSlack, signed_headers
from tests.fakes.telegram_server import FakeTelegram
from tests.integration.service.test_service import SLACK_SECRET, fakes, settings_for
from tests.support import wait_until

__all__ = ["fakes"]

ANN = FakeTelegram.user(7, "Ann")
ADMIN = {"Authorization": "Bearer operator-key-123-0123456789abcdef"}


async def test_after_a_soak_every_key_has_a_ttl_or_a_documented_bound(
    fakes: tuple[FakeTelegram, FakeSlack, FakeDiscord],
    redis_url: str,
    redis_cluster: bool,
    prefix: str,
    tmp_path: Path,
) -> None:
    tg, slack, discord = fakes
    settings = settings_for(fakes, redis_url, prefix, tmp_path).model_copy(
        update={
            "telegram_mode": "polling",
            "budget_daily_usd": 100.0,
            "model_price": "1000,1000",
            "redis_cluster": redis_cluster,
        }
    )
    async with (
        running_service(settings) as core,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{core.http_port}") as http,
    ):
        chat = tg.dm(ANN)

        def tg_out() -> int:
            return sum(len(tg.calls_to(m)) for m in ("sendMessage", "sendDocument"))

        for text in ("hello", "echo one", "file notes.txt", "/link"):
            sent = tg_out()
            tg.say(chat, ANN, text)
            await wait_until(lambda sent=sent: tg_out() > sent, timeout=20)
        sent = tg_out()
        tg.say(chat, ANN, "look", photo=png_bytes(40, 30))
        await wait_until(lambda: tg_out() > sent, timeout=20)
        for text in ("slow 0.5", "echo queued", "echo behind"):  # a queue behind a slow turn
            tg.say(chat, ANN, text)
        await core.manager.idle(timeout=30)
        tg.say(chat, ANN, "choose")
        for n, text in enumerate(("echo via slack", "choose")):
            event = {
                "type": "message",
                "user": "U1",
                "text": text,
                "ts": f"1690000000.00000{n}",
                "channel": "D1",
                "channel_type": "im",
                "team": slack.team_id,
            }
            body = json.dumps(slack.event_callback(event, event_id=f"EvBOUND{n}"))
            headers = {"content-type": "application/json", **signed_headers(SLACK_SECRET, body)}
            assert (
                await http.post("/slack/events", content=body, headers=headers)
            ).status_code == 200
        await discord.user_message("echo via discord", dm=True)
        limits = await http.put(
            "/api/admin/usage/telegram/7/limits", headers=ADMIN, json={"daily_usd": 50}
        )
        assert limits.status_code == 200
        client = connect(redis_url, cluster=redis_cluster)
        try:
            await Accounts(client, keys=Keys(prefix)).create("acme")

            def settled() -> bool:
                tg_asked = [c for c in tg.calls_to("sendMessage") if c.get("reply_markup")]
                slack_asked = [
                    c for c in slack.calls_to("chat.postMessage") if c.params.get("blocks")
                ]
                dc_texts = [
                    m["content"] for m in discord.bot_messages(discord.dm_channel(discord.alice))
                ]
                return bool(tg_asked and slack_asked) and "via discord" in dc_texts

            await wait_until(settled, timeout=60)
            await core.manager.idle(timeout=30)

            unbounded: list[str] = []
            families: set[str] = set()
            async for key in scan_keys(client, prefix):
                family = family_of(key, prefix)
                families.add(family.name if family else f"? {key}")
                if await client.ttl(key) == -1 and (family is None or not family.bound):
                    unbounded.append(key)
        finally:
            await client.aclose()

    assert unbounded == [], f"keys with neither a TTL nor a documented bound: {unbounded}"
    for expected in (
        "inbox",
        "{<thread>}:cp:<part>",
        "{access}:<account, key, link>",
        "usage:{<user>}:limits",
        "{access}:<link token, rate>",
        "qid:<question>",
    ):
        assert expected in families, (expected, sorted(families))
