"""`agent.backends.policy`: which hosts count as the operator's, which key goes to which URL,
and which module paths lead into the data directory. Pure functions over real paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.backends import AgentPolicy, AgentRefused
from agent.backends.policy import agent_host, api_key_for, module_under


def test_a_host_is_its_name_and_port_with_the_schemes_port_by_default() -> None:
    assert agent_host("https://Agents.Example/v1") == "agents.example:443"
    assert agent_host("http://bot:pw@agents.example:8123") == "agents.example:8123"
    assert agent_host("http://[::1]:2024") == "[::1]:2024"
    assert agent_host("http://") is None


def test_only_hosts_the_operator_configured_or_listed_are_approved() -> None:
    policy = AgentPolicy(hosts=frozenset({"listed.example", "[::1]:2024"}))
    policy.file_agents(["https://from-file.example/graph", "python:examples.echo_graph:graph"])
    for url in (
        "https://from-file.example/other",
        "https://user:pw@from-file.example:443/x",
        "http://listed.example:9000",
        "http://[::1]:2024",
    ):
        policy.check(url)
    for url in (
        "http://from-file.example",  # port 80, not the file's 443
        "https://from-file.example.evil.example",
        "http://[::1]:2025",
        "http://127.0.0.1:2024",  # names are compared, not resolved
    ):
        with pytest.raises(AgentRefused, match="host the operator configured"):
            policy.check(url)


def test_a_reload_of_the_file_takes_back_the_hosts_it_no_longer_names() -> None:
    policy = AgentPolicy(default_agent="https://default.example")
    policy.file_agents(["https://old.example"])
    policy.file_agents(["https://new.example"])
    policy.check("https://default.example/x")
    policy.check("https://new.example")
    with pytest.raises(AgentRefused):
        policy.check("https://old.example")


def test_a_key_goes_only_to_the_url_it_was_named_for() -> None:
    named = {"https://agents.example/v1/": "SUPPORT_KEY"}
    env = {"SUPPORT_KEY": "k-1", "LANGSMITH_API_KEY": "ls-1"}
    assert api_key_for("https://bot:pw@Agents.Example:443/v1", named, env) == "k-1"
    assert api_key_for("https://agents.example/v2", named, env) is None
    assert api_key_for("http://agents.example/v1", named, env) is None
    assert api_key_for("https://agents.example/v1", named, {}) is None
    assert api_key_for("https://agents.example/v1", {}, env) is None


def test_module_paths_into_the_data_directory_are_found_without_importing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "files").mkdir(parents=True)
    (data / "files" / "x.py").write_text("raise SystemExit('imported')\n")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(data / "files", tmp_path / "elsewhere" / "linked")
    search = [str(tmp_path)]
    assert module_under("data.files.x", data, search)
    assert module_under("data", data, search)  # its __init__ would run from there
    assert module_under("elsewhere.linked.x", data, search)  # a symlink into it
    assert not module_under("elsewhere", data, search)
    assert not module_under("json", data, search)
