"""Markdown → Telegram HTML: only supported tags, everything else escaped."""

from __future__ import annotations

from html.parser import HTMLParser

from channels.adapter import Capabilities, Markup
from channels.render import render_chunks

TELEGRAM = Capabilities(max_len=4096, len_unit="utf16", markup=Markup.TELEGRAM_HTML)
ALLOWED = {"b", "i", "s", "u", "code", "pre", "a", "blockquote"}


def telegram(markdown: str) -> str:
    chunks = render_chunks(markdown, TELEGRAM)
    assert len(chunks) == 1
    return chunks[0].text


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)


def test_user_html_shows_literally():
    assert telegram("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"


def test_emphasis_maps_to_telegram_tags():
    assert telegram("**b** *i* ~~s~~ `c`") == "<b>b</b> <i>i</i> <s>s</s> <code>c</code>"


def test_nested_emphasis_nests_tags():
    assert telegram("**bold *both* bold**") == "<b>bold <i>both</i> bold</b>"


def test_fenced_code_keeps_its_language_and_escapes_content():
    assert (
        telegram("```python\nx = a < b & c\n```")
        == '<pre><code class="language-python">x = a &lt; b &amp; c</code></pre>'
    )


def test_code_block_without_language_is_bare_pre():
    assert telegram("```\nplain\n```") == "<pre>plain</pre>"


def test_link_href_is_quoted_and_label_escaped():
    text = telegram('[a <b> "c"](https://example.com/?q="x"&y=1)')
    assert text == '<a href="https://example.com/?q=%22x%22&amp;y=1">a &lt;b&gt; "c"</a>'


def test_link_with_unsupported_scheme_is_text():
    assert telegram("[x](ftp://example.com/f)") == "x (ftp://example.com/f)"


def test_headings_are_bold_and_quotes_are_blockquotes():
    assert (
        telegram("## Title\n\n> said\n> it") == "<b>Title</b>\n\n<blockquote>said\nit</blockquote>"
    )


def test_lists_use_bullets():
    assert telegram("- a\n- b\n\n1. c") == "• a\n• b\n\n1. c"


def test_only_supported_tags_are_emitted():
    markdown = (
        "# H\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n---\n\n> q\n\n- [l](https://x.y)\n\n"
        "![img](https://x.y/i.png) <span>raw</span>"
    )
    parser = _Tags()
    parser.feed(telegram(markdown))
    assert parser.tags <= ALLOWED


def test_table_becomes_aligned_preformatted_text():
    assert (
        telegram("| a | bb |\n|---|---|\n| ccc | d |") == "<pre>a   | bb\n----+---\nccc | d</pre>"
    )


def test_plain_fallback_keeps_content_and_code_fences():
    (chunk,) = render_chunks("**Hi** [docs](https://x.y)\n\n```py\nx\n```", TELEGRAM)
    assert chunk.plain == "Hi docs (https://x.y)\n\n```py\nx\n```"
