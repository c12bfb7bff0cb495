"""Discord message payloads as conversation context (pure): names, readable mentions, the time
from the id, and the replied message a gateway event carries."""

from __future__ import annotations

from typing import Any

from channels.discord import to_inbound
from channels.discord.events import BotIdentity, snowflake_time, to_context

__all__: list[str] = []

ME = BotIdentity(id="900", name="switchboard")
ALICE = {"id": "300", "username": "alice", "global_name": "Alice", "bot": False}
BOB = {"id": "301", "username": "bob", "global_name": None, "bot": False}
SWITCHBOARD = {"id": "900", "username": "switchboard", "global_name": None, "bot": True}
ID = "1200000000000000000"  # made 2024-01-25 (ids carry their time)


def payload(content: str, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": ID,
        "channel_id": "200",
        "author": ALICE,
        "content": content,
        "mentions": [],
        "attachments": [],
        "type": 0,
    }
    data.update(extra)
    return data


def test_a_message_becomes_context_with_readable_mentions_and_its_time() -> None:
    data = payload(
        "<@301> and <@!900>: see <#200>, ping <@&77> <:party:123>",
        mentions=[BOB, SWITCHBOARD],
        attachments=[{"id": "1", "filename": "log.txt", "size": 3, "url": "u"}],
    )
    context = to_context(data, ME)
    assert context.text == "@bob and @switchboard: see #channel, ping @role :party:"
    assert (context.sender, context.attachments, context.is_self) == ("Alice", ("log.txt",), False)
    assert context.sent_at == snowflake_time(ID) and 1.706e9 < context.sent_at < 1.707e9


def test_a_guild_nickname_wins_over_the_account_name() -> None:
    data = payload("hi", author=BOB, member={"nick": "Bobby"})
    assert to_context(data, ME).sender == "Bobby"
    assert to_context(payload("hi", author=BOB), ME, names={"301": "Robert"}).sender == "Robert"
    assert to_context(payload("hi", author=BOB), ME).sender == "bob"


def test_a_reply_event_carries_the_replied_message_and_what_it_replied_to() -> None:
    replied = payload(
        "Only if it stays short.",
        id="1199999999999999999",
        author=BOB,
        type=19,
        message_reference={"message_id": "1199999999999999000", "channel_id": "200"},
    )
    event = payload(
        "<@900> thoughts?",
        guild_id="100",
        type=19,
        mentions=[SWITCHBOARD],
        message_reference={"message_id": replied["id"], "channel_id": "200"},
        referenced_message=replied,
    )
    msg = to_inbound(event, ME)
    (quoted,) = msg.quoted
    assert (quoted.message_id, quoted.sender, quoted.replied_to) == (replied["id"], "bob", True)
    assert quoted.reply_to_id == "1199999999999999000"
    assert msg.sent_at == snowflake_time(ID)
    assert to_inbound(payload("<@900> hi", guild_id="100", mentions=[SWITCHBOARD]), ME).quoted == ()
