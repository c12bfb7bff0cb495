"""The CLI refuses to run when another distribution owns one of our top-level packages."""

from __future__ import annotations

import pytest

from service import cli
from service.shadowing import OUR_PACKAGES, shadowing_problem


def test_our_own_environment_has_no_clash() -> None:
    assert shadowing_problem() is None


def test_a_foreign_channels_package_is_named_with_its_distribution() -> None:
    owners = {name: ["switchboard"] for name in OUR_PACKAGES}
    owners["channels"] = ["switchboard", "channels"]
    problem = shadowing_problem(owners)
    assert problem is not None
    assert "'channels' (also installed by channels)" in problem
    assert "own environment" in problem


def test_cli_exits_with_one_line_when_shadowed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        cli, "shadowing_problem", lambda: "another installed distribution provides 'agent'"
    )
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["switchboard: another installed distribution provides 'agent'"]
