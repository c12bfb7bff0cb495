"""Votes from each platform's payloads (pure parsers), and through the inbox codec."""

from __future__ import annotations

from typing import Any

from channels.discord.events import parse_vote_custom_id, vote_custom_id, vote_to_inbound
from channels.manager.codec import decode_message, encode_message
from channels.slack.blocks import answer_blocks
from channels.slack.events import BotIdentity, parse_vote_value, to_inbound
from channels.telegram.reactions import reaction_vote

SLACK_ME = BotIdentity(user_id="UBOT", team_id="T1")


def _slack_press(value: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": "U1", "username": "ann", "team_id": "T1"},
        "container": {"type": "message", "message_ts": "10.5", "channel_id": "C1"},
        "channel": {"id": "C1"},
        "message": {"ts": "10.5", "thread_ts": "10.1"},
        "actions": [
            {"type": "feedback_buttons", "action_id": "fb", "value": value, "action_ts": "11.0"}
        ],
    }


def test_slack_feedback_buttons_carry_the_run_and_a_press_is_that_users_vote() -> None:
    (*sections, actions) = answer_blocks("the *answer*", "run-1")
    assert sections == [{"type": "section", "text": {"type": "mrkdwn", "text": "the *answer*"}}]
    element = actions["elements"][0]
    assert actions["type"] == "context_actions" and element["type"] == "feedback_buttons"
    value = element["negative_button"]["value"]
    assert parse_vote_value(value) == ("down", "run-1")
    msg = to_inbound(_slack_press(value), SLACK_ME)
    assert msg is not None and msg.vote is not None
    assert (msg.sender_id, msg.chat_id, msg.thread_anchor) == ("U1", "C1", "10.1")
    assert (msg.vote.value, msg.vote.run_id, msg.vote.message_id) == ("down", "run-1", "10.5")


def test_slack_ignores_a_feedback_value_that_is_not_ours() -> None:
    assert to_inbound(_slack_press("fb:meh:run-1"), SLACK_ME) is None
    assert parse_vote_value("q:abc:1") is None


def test_discord_vote_ids_round_trip_and_a_press_is_the_pressers_vote() -> None:
    custom_id = vote_custom_id("up", "run-1")
    assert len(custom_id) <= 100 and parse_vote_custom_id(custom_id) == ("up", "run-1")
    payload = {
        "id": "900",
        "type": 3,
        "guild_id": "G1",
        "channel_id": "T7",
        "data": {"custom_id": custom_id, "component_type": 2},
        "member": {"user": {"id": "42", "username": "bob"}},
        "message": {"id": "555"},
        "token": "secret-token",
    }
    msg = vote_to_inbound(payload)
    assert msg is not None and msg.vote is not None
    assert (msg.sender_id, msg.chat_id, msg.vote.message_id) == ("42", "T7", "555")
    assert msg.raw is None and msg.handle is None  # the interaction token stays out of the inbox


def _reaction(old: list[str], new: list[str], user: dict[str, Any] | None) -> dict[str, Any]:
    change: dict[str, Any] = {
        "chat": {"id": -100, "type": "supergroup", "title": "Team"},
        "message_id": 77,
        "date": 1,
        "old_reaction": [{"type": "emoji", "emoji": e} for e in old],
        "new_reaction": [{"type": "emoji", "emoji": e} for e in new],
    }
    if user is not None:
        change["user"] = user
    return {"update_id": 5, "message_reaction": change}


ANN = {"id": 7, "is_bot": False, "first_name": "Ann"}


def test_telegram_thumbs_reactions_are_votes_and_others_are_not() -> None:
    down = reaction_vote(_reaction([], ["👎"], ANN))
    assert down is not None and down.vote is not None
    assert (down.vote.value, down.vote.message_id, down.sender_id) == ("down", "77", "7")
    up = reaction_vote(_reaction(["👎"], ["👍", "🔥"], ANN))
    assert up is not None and up.vote is not None and up.vote.value == "up"
    withdrawn = reaction_vote(_reaction(["👍"], [], ANN))
    assert withdrawn is not None and withdrawn.vote is not None and withdrawn.vote.value == ""
    assert reaction_vote(_reaction([], ["🔥"], ANN)) is None  # not a vote
    assert reaction_vote(_reaction(["👍"], ["👍", "🔥"], ANN)) is None  # the vote did not change
    assert reaction_vote(_reaction([], ["👍"], None)) is None  # anonymous: no one's vote


def test_each_vote_update_is_its_own_delivery_and_survives_the_inbox() -> None:
    first = reaction_vote(_reaction([], ["👎"], ANN))
    later = reaction_vote(_reaction(["👎"], ["👍"], ANN) | {"update_id": 6})
    assert first is not None and later is not None
    assert set(first.dedupe_ids).isdisjoint(later.dedupe_ids)
    assert decode_message(encode_message(first)).vote == first.vote
