"""Bindings files: what is refused (one line per problem, with the rule's position) and which
rule's settings a conversation gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels.bindings import BindingsError, Subject, explain, load_bindings, parse_bindings
from switchboard.agent_choice import AgentChoice
from switchboard.state import BusyMode

EXAMPLE = """\
- platform: slack
  channel: C0123ABCD
  model: openai:gpt-4o-mini
- platform: telegram
  workspace: "-1001234567890"
  require_mention: false
  sessions: per_user
- account: acme
  agent: https://agents.acme.example
  assistant: support
"""


def test_the_issue_example_loads_with_each_rule_in_file_order() -> None:
    bindings = parse_bindings(EXAMPLE, source="bindings.yaml")
    assert [r.position for r in bindings.rules] == [1, 2, 3]
    assert [r.line for r in bindings.rules] == [1, 4, 8]
    assert bindings.uses_account


def test_a_bad_file_names_every_problem_on_its_own_line_with_the_rule_position() -> None:
    text = """\
- platform: slak
  model: openai:x
- chanel: C1
  model: openai:x
- platform: slack
- 42
- platform: discord
  busy: sometimes
  require_mention: "no"
"""
    with pytest.raises(BindingsError) as caught:
        parse_bindings(text, source="b.yaml")
    problems = caught.value.problems
    assert problems == [
        "rule 1 (line 1): platform must be one of slack, telegram, discord, console; got 'slak'",
        problems[1],
        "rule 3 (line 5): sets nothing: give at least one of agent, assistant, model, "
        "system_prompt, busy, streaming, require_mention, allow_bots, sessions",
        "rule 4 (line 6): expected a mapping of match keys and settings",
        "rule 5 (line 7): busy must be one of steer, collect, interrupt, queue, reject; "
        "got 'sometimes'",
        "rule 5 (line 7): require_mention must be true or false",
    ]
    assert problems[1].startswith("rule 2 (line 3): unknown key 'chanel'")
    assert str(caught.value).startswith("invalid SWITCHBOARD_BINDINGS b.yaml:\n  rule 1")
    assert all("\n" not in p for p in problems)


def test_a_json_file_is_read_and_its_errors_name_the_rule() -> None:
    good = parse_bindings('[{"platform": "slack", "model": "openai:m"}]', json_only=True)
    assert good.rules[0].settings == (("model", "openai:m"),)
    with pytest.raises(BindingsError, match=r"rule 1: agent must be builtin"):
        parse_bindings('[{"platform": "slack", "agent": "ftp://x"}]', json_only=True)


def test_unreadable_yaml_and_a_missing_file_are_one_line_each(tmp_path: Path) -> None:
    with pytest.raises(BindingsError, match=r"line 3: not valid YAML"):
        parse_bindings("- platform: slack\n  model: openai:m\n - oops: [\n")
    with pytest.raises(BindingsError, match="cannot read the file"):
        load_bindings(tmp_path / "missing.yaml")
    with pytest.raises(BindingsError, match="expected a list of rules"):
        parse_bindings("platform: slack\n")


def test_numeric_ids_match_as_the_platform_sends_them() -> None:
    bindings = parse_bindings("- workspace: -1001234567890\n  sessions: per_user\n")
    subject = Subject("telegram", workspace="-1001234567890", channel="-1001234567890")
    assert bindings.resolve(subject).get("sessions") == "per_user"


def test_channel_beats_workspace_beats_account_beats_platform_for_each_setting() -> None:
    bindings = parse_bindings(
        """\
- platform: slack
  model: openai:platform
  streaming: off
- account: acme
  model: openai:account
  busy: queue
- platform: slack
  workspace: T1
  model: openai:workspace
- platform: slack
  channel: C1
  model: openai:channel
"""
    )
    in_c1 = bindings.resolve(Subject("slack", "T1", "C1", "U1", account="acme"))
    assert in_c1.get("model") == "openai:channel"
    assert in_c1.busy is BusyMode.QUEUE  # from the account rule: no more specific one sets it
    assert in_c1.get("streaming") == "off"
    assert [r.position for r in in_c1.matched] == [4, 3, 2, 1]
    elsewhere = bindings.resolve(Subject("slack", "T1", "C2", "U1", account="acme"))
    assert elsewhere.get("model") == "openai:workspace"
    other_team = bindings.resolve(Subject("slack", "T2", "C9", "U1", account="acme"))
    assert other_team.get("model") == "openai:account"
    stranger = bindings.resolve(Subject("slack", "T2", "C9", "U1"))
    assert stranger.get("model") == "openai:platform"
    assert bindings.resolve(Subject("discord", "G1", "C1", "U1")).matched == ()


def test_between_equally_specific_rules_the_first_in_the_file_wins() -> None:
    bindings = parse_bindings(
        "- channel: C1\n  model: openai:first\n- user: U1\n  model: openai:second\n"
    )
    assert bindings.resolve(Subject("slack", "T1", "C1", "U1")).get("model") == "openai:first"


def test_a_discord_role_matches_when_the_sender_has_it() -> None:
    bindings = parse_bindings(
        "- platform: discord\n  discord_role: '42'\n  agent: python:examples.echo_graph:graph\n"
    )
    with_role = bindings.resolve(Subject("discord", "G1", "C1", "U1", roles=("7", "42")))
    assert with_role.agent == AgentChoice(agent="python:examples.echo_graph:graph")
    assert bindings.resolve(Subject("discord", "G1", "C1", "U1", roles=("7",))).agent is None
    with pytest.raises(BindingsError, match="discord_role matches Discord only"):
        parse_bindings("- platform: slack\n  discord_role: '42'\n  model: openai:m\n")


def test_explain_names_the_matching_rules_and_where_each_setting_comes_from() -> None:
    bindings = parse_bindings(EXAMPLE.replace("agents.acme", "bob:hunter2@agents.acme"))
    text = explain(
        bindings,
        Subject("slack", "T1", "C0123ABCD", "U1", account="acme"),
        {"model": "demo", "agent": "builtin", "busy": "steer"},
    )
    assert "rule 1 (line 1): platform=slack, channel=C0123ABCD" in text
    assert "rule 3 (line 8): account=acme" in text
    assert "  model: openai:gpt-4o-mini  (rule 1)" in text
    assert "  assistant: support  (rule 3)" in text
    assert "  busy: steer  (default)" in text
    assert "hunter2" not in text  # an agent URL's credentials are masked
