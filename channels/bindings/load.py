"""Read and check a bindings file (`SWITCHBOARD_BINDINGS`): a YAML or JSON list of flat rules.

Every problem is one line naming the rule's position (and its line in a YAML file), and all of
them are reported at once, so an operator fixes the file in one pass; the service does not start
on a bad file, and a reload with one keeps the rules it has.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

from channels.bindings.rules import MATCH_KEYS, SETTING_KEYS, Bindings, Rule
from switchboard.errors import ConfigError
from switchboard.state import BusyMode

__all__ = ["BindingsError", "load_bindings", "parse_bindings"]

_PLATFORMS = ("slack", "telegram", "discord", "console")
_AGENT = re.compile(
    r"^(builtin|python:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*|https?://[^\s/]+\S*)$", re.I
)
_CHOICES: dict[str, tuple[str, ...]] = {
    "busy": tuple(BusyMode),
    "allow_bots": ("none", "mentions", "all"),
    "sessions": ("shared", "per_user"),
}
MAX_RULES = 10_000  # rules are matched in memory per turn; a file this long is a mistake


class BindingsError(ConfigError):
    """A bindings file that cannot be used; `problems` holds one line per error."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"invalid SWITCHBOARD_BINDINGS {source}:\n{lines}")


def load_bindings(path: Path) -> Bindings:
    """The rules of the file at `path`; raises `BindingsError` naming every problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise BindingsError(str(path), [f"cannot read the file: {reason}"]) from None
    bindings = parse_bindings(text, source=str(path), json_only=path.suffix.lower() == ".json")
    digest = hashlib.sha256(text.encode()).hexdigest()
    return dataclasses.replace(bindings, digest=digest)


def parse_bindings(text: str, *, source: str = "bindings", json_only: bool = False) -> Bindings:
    data, lines = _read(text, source, json_only=json_only)
    if data is None:
        return Bindings(source=source)
    if not isinstance(data, list):
        raise BindingsError(source, ["expected a list of rules (each a mapping)"])
    if len(data) > MAX_RULES:
        raise BindingsError(source, [f"{len(data)} rules; at most {MAX_RULES}"])
    problems: list[str] = []
    rules: list[Rule] = []
    for index, item in enumerate(data, start=1):
        line = lines[index - 1] if index - 1 < len(lines) else 0
        rule = _rule(index, line, item, problems)
        if rule is not None:
            rules.append(rule)
    if problems:
        raise BindingsError(source, problems)
    return Bindings(tuple(rules), source=source)


def _read(text: str, source: str, *, json_only: bool) -> tuple[Any, list[int]]:
    """The parsed document and, for YAML, the line each top-level item starts on."""
    if json_only:
        try:
            return json.loads(text) if text.strip() else None, []
        except json.JSONDecodeError as exc:
            raise BindingsError(
                source, [f"line {exc.lineno}: not valid JSON ({exc.msg})"]
            ) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise BindingsError(source, [f"{where}not valid YAML ({problem})"]) from None
    if not isinstance(node, yaml.SequenceNode):
        return data, []
    return data, [item.start_mark.line + 1 for item in node.value]


def _rule(index: int, line: int, item: Any, problems: list[str]) -> Rule | None:
    where = f"rule {index}" + (f" (line {line})" if line else "")
    if not isinstance(item, dict):
        problems.append(f"{where}: expected a mapping of match keys and settings")
        return None
    before = len(problems)
    match: list[tuple[str, str]] = []
    settings: list[tuple[str, Any]] = []
    for key, value in item.items():
        name = str(key)
        if name in MATCH_KEYS:
            checked = _match_value(name, value)
            if isinstance(checked, _Problem):
                problems.append(f"{where}: {name} {checked.text}")
            else:
                match.append((name, checked))
        elif name in SETTING_KEYS:
            setting = _setting_value(name, value)
            if isinstance(setting, _Problem):
                problems.append(f"{where}: {name} {setting.text}")
            else:
                settings.append((name, setting))
        else:
            problems.append(
                f"{where}: unknown key {name!r} (match keys: {', '.join(MATCH_KEYS)}; "
                f"settings: {', '.join(SETTING_KEYS)})"
            )
    if not match and len(problems) == before:
        problems.append(f"{where}: matches nothing: name at least one of {', '.join(MATCH_KEYS)}")
    if not settings and len(problems) == before:
        problems.append(f"{where}: sets nothing: give at least one of {', '.join(SETTING_KEYS)}")
    arrival = sorted({name for name, _ in settings} & {"require_mention", "allow_bots"})
    if arrival and "account" in dict(match):
        problems.append(
            f"{where}: {' and '.join(arrival)} cannot depend on account: they are decided as a "
            "message arrives, before its account is known; match on workspace instead"
        )
    platform = dict(match).get("platform")
    if "discord_role" in dict(match) and platform not in (None, "discord"):
        problems.append(f"{where}: discord_role matches Discord only, but platform is {platform}")
    if len(problems) > before:
        return None
    return Rule(index, tuple(match), tuple(settings), line)


class _Problem:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _match_value(name: str, value: Any) -> str | _Problem:
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value).strip() == "":
        return _Problem("must be a non-empty string or number (one id)")
    text = str(value).strip()
    if name == "platform":
        text = text.lower()
        if text not in _PLATFORMS:
            return _Problem(f"must be one of {', '.join(_PLATFORMS)}; got {text!r}")
    return text


def _setting_value(name: str, value: Any) -> Any:
    if name in ("require_mention",):
        if not isinstance(value, bool):
            return _Problem("must be true or false")
        return value
    if name == "streaming":
        if isinstance(value, bool):
            return "on" if value else "off"
        if str(value).lower() in ("on", "off"):
            return str(value).lower()
        return _Problem("must be on or off")
    if not isinstance(value, str) or not value.strip():
        return _Problem("must be a non-empty string")
    text = value.strip()
    if name in _CHOICES:
        if text.lower() not in _CHOICES[name]:
            return _Problem(f"must be one of {', '.join(_CHOICES[name])}; got {text!r}")
        return text.lower()
    if name == "agent" and not _AGENT.match(text):
        return _Problem(
            "must be builtin, python:pkg.module:attr or an http(s):// URL of a LangGraph server"
        )
    if name == "model" and text != "demo" and ":" not in text:
        return _Problem("must be 'demo' or 'provider:model', e.g. openai:gpt-4o-mini")
    return text.rstrip("/") if name == "agent" else text if name != "system_prompt" else value
