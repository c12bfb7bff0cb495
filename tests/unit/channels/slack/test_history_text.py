"""Slack message markup made readable for conversation context (pure)."""

from __future__ import annotations

import pytest

from channels.slack.history import readable_text

__all__: list[str] = []

NAMES = {"U1": "Ann", "U2": "Bob"}


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("<@U1> can you check?", "@Ann can you check?"),
        ("ask <@U9|carl> or <@U8>", "ask @carl or @U8"),
        ("<!here> deploy at 5", "@here deploy at 5"),
        ("<!channel> <!everyone>", "@channel @everyone"),
        ("<!subteam^S123|@oncall> please", "@oncall please"),
        ("see <#C1|general>", "see #general"),
        (
            "docs: <https://x.io/a|the guide> and <https://x.io/b>",
            "docs: the guide (https://x.io/a) and https://x.io/b",
        ),
        ("<mailto:a@b.io|a@b.io>", "a@b.io"),
        ("1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"),
        ("<!date^1700000000^{date}|Nov 14>", "Nov 14"),
    ],
)
def test_slack_markup_reads_as_the_client_shows_it(raw: str, shown: str) -> None:
    assert readable_text(raw, NAMES) == shown
