"""Markdown → Slack mrkdwn: formatting, escaping, and mentions that can never fire."""

from __future__ import annotations

import pytest

from channels.adapter import Capabilities, Markup
from channels.render import render_chunks

SLACK = Capabilities(max_len=4000, len_unit="chars", markup=Markup.SLACK_MRKDWN)


def slack(markdown: str) -> str:
    chunks = render_chunks(markdown, SLACK)
    assert len(chunks) == 1
    return chunks[0].text


def test_emphasis_becomes_slack_marks():
    assert slack("**bold**, *italic*, ~~gone~~ and `code`") == "*bold*, _italic_, ~gone~ and `code`"


def test_nested_emphasis_nests_marks():
    assert slack("**bold _both_ bold**") == "*bold _both_ bold*"


def test_ampersand_and_angle_brackets_are_escaped_in_text_and_code():
    assert slack("a & b < c > d `x<y>&z`") == "a &amp; b &lt; c &gt; d `x&lt;y&gt;&amp;z`"


@pytest.mark.parametrize(
    "mention",
    ["<!channel>", "<!here>", "<!everyone>", "<@U123>", "<#C1>", "<!subteam^S1|team>"],
)
def test_special_mentions_in_model_text_are_escaped(mention):
    text = slack(f"hey {mention} there")
    assert "<" not in text
    assert text == f"hey {mention.replace('<', '&lt;').replace('>', '&gt;')} there"


def test_mention_inside_link_label_is_escaped():
    assert slack("[<!channel>](https://example.com)") == "<https://example.com|&lt;!channel&gt;>"


def test_link_destination_without_scheme_is_not_a_link():
    text = slack("[click](<!channel>) and [x](@U123)")
    assert "<!" not in text and "<@" not in text
    assert text == "click (!channel) and x (@U123)"


def test_links_use_angle_syntax_and_escape_the_url():
    assert (
        slack("[docs](https://example.com/a?x=1&y=2)") == "<https://example.com/a?x=1&amp;y=2|docs>"
    )
    assert slack("<https://example.com/a>") == "<https://example.com/a>"


def test_pipe_in_url_cannot_end_the_url():
    assert slack("<https://example.com/a|b>") == "<https://example.com/a%7Cb>"


def test_bullet_lists_use_bullets_and_nesting_indents():
    assert slack("- one\n- two\n  - inner") == "• one\n• two\n    • inner"


def test_ordered_lists_keep_their_numbers():
    assert slack("3. three\n4. four") == "3. three\n4. four"


def test_headings_become_bold_lines():
    assert slack("# Title\n\nBody") == "*Title*\n\nBody"


def test_code_block_has_fences_without_language_and_escaped_content():
    assert slack("```python\nif a < b:\n    pass\n```") == "```\nif a &lt; b:\n    pass\n```"


def test_literal_triple_backticks_cannot_open_a_code_block():
    text = slack("```` ```x``` ````")
    assert "```" not in text


def test_blockquote_lines_are_prefixed():
    assert slack("> one\n> two\n\nafter") == "> one\n> two\n\nafter"


def test_raw_html_shows_as_text():
    assert slack("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"


def test_plain_form_drops_markup():
    (chunk,) = render_chunks("**Hi** [docs](https://example.com) & `x`", SLACK)
    assert chunk.plain == "Hi docs (https://example.com) & x"
