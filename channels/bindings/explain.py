"""Why a conversation behaves as it does: the matching rules and each setting's origin, as text
for `switchboard bindings explain` (and anything else that wants to say it)."""

from __future__ import annotations

from collections.abc import Mapping

from channels.bindings.rules import SETTING_KEYS, Bindings, Subject
from switchboard.masking import mask

__all__ = ["explain"]

_SHOWN_PROMPT = 60  # a system prompt is shown cut to this many characters


def explain(bindings: Bindings, subject: Subject, defaults: Mapping[str, str]) -> str:
    """One line per matching rule (most specific first), then every setting with its value and
    where it comes from: a rule, or the default (`defaults`: setting -> the default's text)."""
    effective = bindings.resolve(subject)
    lines = [f"bindings: {bindings.source or '(none)'}, {len(bindings.rules)} rules"]
    if not effective.matched:
        lines.append("no rule matches: every setting is the default")
    else:
        lines.append("matching rules, most specific first:")
        lines.extend(f"  {rule.label()}" for rule in effective.matched)
    lines.append("effective settings:")
    for name in SETTING_KEYS:
        rule = effective.sources.get(name)
        if rule is not None:
            value = _show(name, effective.values[name])
            lines.append(f"  {name}: {value}  (rule {rule.position})")
        else:
            lines.append(f"  {name}: {_show(name, defaults.get(name, ''))}  (default)")
    return "\n".join(lines)


def _show(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(mask(str(value), key=name))  # an agent URL may carry credentials
    if name == "system_prompt" and len(text) > _SHOWN_PROMPT:
        return repr(text[:_SHOWN_PROMPT] + "…")
    return repr(text) if name == "system_prompt" else text
