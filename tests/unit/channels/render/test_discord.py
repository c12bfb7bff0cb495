"""Markdown → Discord markdown: passes through, with mentions that cannot ping."""

from __future__ import annotations

import pytest

from channels.adapter import Capabilities, Markup
from channels.render import render_chunks

DISCORD = Capabilities(max_len=2000, len_unit="chars", markup=Markup.DISCORD_MARKDOWN)
ZW = "\u200b"


def discord(markdown: str) -> str:
    chunks = render_chunks(markdown, DISCORD)
    assert len(chunks) == 1
    return chunks[0].text


@pytest.mark.parametrize(
    ("mention", "neutral"),
    [
        ("@everyone", f"@{ZW}everyone"),
        ("@here", f"@{ZW}here"),
        ("<@123>", f"<@{ZW}123>"),
        ("<@!123>", f"<@{ZW}!123>"),
        ("<@&123>", f"<@{ZW}&123>"),
        ("<#123>", f"<#{ZW}123>"),
    ],
)
def test_mentions_get_a_zero_width_space(mention, neutral):
    assert discord(f"hi {mention} now") == f"hi {neutral} now"


def test_mentions_in_code_and_link_labels_are_neutralised_too():
    text = discord("`@everyone` [<@1>](https://x.y) ```\n@here\n```")
    assert "@everyone" not in text and "<@1" not in text and "@here" not in text


def test_formatting_passes_through():
    assert discord("**b** *i* ~~s~~ `c`") == "**b** _i_ ~~s~~ `c`"
    assert discord("**bold *both* bold**") == "**bold _both_ bold**"


def test_literal_markdown_characters_stay_literal():
    assert discord(r"2 \* 3 and snake\_case") == r"2 \* 3 and snake\_case"


def test_urls_in_text_are_not_escaped():
    assert discord("see https://x.y/a_b_c now") == "see https://x.y/a_b_c now"


def test_escaped_heading_marker_at_line_start_stays_text():
    assert discord(r"\# not a heading") == r"\# not a heading"
    assert discord(r"1\. not a list") == r"1\. not a list"


def test_code_block_keeps_language():
    assert discord("```python\nprint(1)\n```") == "```python\nprint(1)\n```"


def test_links_are_masked_and_autolinks_suppress_embeds():
    assert discord("[docs](https://x.y/a)") == "[docs](https://x.y/a)"
    assert discord("<https://x.y/a>") == "<https://x.y/a>"


def test_link_url_parentheses_are_encoded():
    assert discord("[w](<https://x.y/a(b)>)") == "[w](https://x.y/a%28b%29)"


def test_headings_and_lists_pass_through():
    assert discord("## Title\n\n- a\n  - b\n\n1. c") == "## Title\n\n- a\n  - b\n\n1. c"


def test_quotes_prefix_every_line():
    assert discord("> a\n> b\n>\n> c") == "> a\n> b\n> \n> c"


def test_inline_code_with_backtick_uses_double_delimiters():
    assert discord("``a`b``") == "`` a`b ``"


def test_mail_links_show_the_address():
    assert discord("<a@b.co> and [mail me](mailto:a@b.co)") == "a@b.co and mail me (a@b.co)"
