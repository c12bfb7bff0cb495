"""Cutting rendered replies at platform limits: where cuts go and what each message keeps."""

from __future__ import annotations

import re

from channels.adapter import Capabilities, Markup
from channels.render import render_chunks
from channels.render.chunking import measure_fn

utf16 = measure_fn("utf16")


def caps(markup: Markup, max_len: int, unit: str = "chars") -> Capabilities:
    return Capabilities(max_len=max_len, len_unit=unit, markup=markup)  # type: ignore[arg-type]


def words(n: int, word: str = "word") -> str:
    return " ".join([word] * n)


def test_short_reply_is_one_chunk():
    chunks = render_chunks("Hello **there**", caps(Markup.TELEGRAM_HTML, 4096, "utf16"))
    assert [c.text for c in chunks] == ["Hello <b>there</b>"]


def test_cut_prefers_a_paragraph_break():
    text = f"{words(10)}\n{words(4)}\n\n{words(8)}. {words(8)}"
    chunks = render_chunks(text, caps(Markup.PLAIN, 120))
    assert [c.text for c in chunks] == [f"{words(10)}\n{words(4)}", f"{words(8)}. {words(8)}"]


def test_cut_prefers_a_newline_over_a_sentence_end():
    text = f"{words(8)}. {words(4)}\n{words(10)}"
    chunks = render_chunks(text, caps(Markup.PLAIN, 80))
    assert chunks[0].text == f"{words(8)}. {words(4)}"


def test_cut_prefers_a_sentence_end_over_a_space():
    text = f"{words(10)}. {words(10)}"
    chunks = render_chunks(text, caps(Markup.PLAIN, 80))
    assert [c.text for c in chunks] == [f"{words(10)}.", words(10)]


def test_cut_falls_back_to_a_space_then_to_a_hard_cut():
    assert [c.text for c in render_chunks(words(30), caps(Markup.PLAIN, 50))] == [
        words(10),
        words(10),
        words(10),
    ]
    long_word = "x" * 130
    assert [c.text for c in render_chunks(long_word, caps(Markup.PLAIN, 50))] == [
        "x" * 50,
        "x" * 50,
        "x" * 30,
    ]


def test_early_paragraph_break_does_not_make_a_tiny_message():
    text = f"Title\n\n{words(40)}"
    chunks = render_chunks(text, caps(Markup.PLAIN, 100))
    assert chunks[0].text.startswith("Title\n\nword word")


def test_limit_applies_after_escaping():
    text = "&" * 300
    chunks = render_chunks(text, caps(Markup.TELEGRAM_HTML, 100, "utf16"))
    assert all(len(c.text) <= 100 for c in chunks)
    assert all(re.fullmatch(r"(&amp;)+", c.text) for c in chunks)
    assert "".join(c.plain for c in chunks) == text


def test_utf16_counts_astral_characters_twice():
    text = "😀" * 3000
    chunks = render_chunks(text, caps(Markup.TELEGRAM_HTML, 4096, "utf16"))
    assert [len(c.text) for c in chunks] == [2048, 952]
    assert all(utf16(c.text) <= 4096 for c in chunks)


def test_hard_cut_keeps_emoji_modifiers_with_their_base():
    text = "👍🏽" * 40
    chunks = render_chunks(text, caps(Markup.PLAIN, 25))
    for chunk in chunks:
        assert not chunk.text.startswith("🏽")
    assert "".join(c.text for c in chunks) == text


def test_code_block_is_closed_and_reopened_with_its_language():
    code = "\n".join(f"line_{n} = {n}" for n in range(30))
    chunks = render_chunks(f"```python\n{code}\n```", caps(Markup.DISCORD_MARKDOWN, 120))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("```python\n") and chunk.text.endswith("\n```")
        assert len(chunk.text) <= 120
    body = "\n".join(c.text.removeprefix("```python\n").removesuffix("\n```") for c in chunks)
    assert body == code


def test_telegram_code_block_reopens_pre_with_language_class():
    code = "\n".join(f"if a_{n} < b: pass" for n in range(30))
    chunks = render_chunks(f"```python\n{code}\n```", caps(Markup.TELEGRAM_HTML, 200, "utf16"))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith('<pre><code class="language-python">')
        assert chunk.text.endswith("</code></pre>")


def test_formatting_is_closed_at_the_cut_and_reopened():
    text = "**" + words(30) + "**"
    chunks = render_chunks(text, caps(Markup.TELEGRAM_HTML, 60, "utf16"))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("<b>") and chunk.text.endswith("</b>")


def test_quote_prefix_continues_in_the_next_message():
    text = "> " + words(30)
    chunks = render_chunks(text, caps(Markup.SLACK_MRKDWN, 60))
    assert len(chunks) > 1
    assert all(c.text.startswith("> ") for c in chunks)


def test_links_are_never_split():
    link = "[the documentation](https://example.com/a/long/path)"
    text = f"{words(5)} {link} {words(5)}"
    chunks = render_chunks(text, caps(Markup.SLACK_MRKDWN, 60))
    target = "<https://example.com/a/long/path|the documentation>"
    assert any(target in c.text for c in chunks)
    for chunk in chunks:
        assert chunk.text.count("<") == chunk.text.count(">")


def test_link_longer_than_the_limit_falls_back_to_its_text():
    url = "https://example.com/" + "p" * 200
    chunks = render_chunks(f"[label]({url})", caps(Markup.TELEGRAM_HTML, 100, "utf16"))
    assert all(len(c.text) <= 100 for c in chunks)
    assert " ".join(c.plain for c in chunks).replace(" ", "") == f"label({url})"


def test_list_bullet_stays_with_its_item():
    text = "\n".join(f"- item number {n} with some words" for n in range(10))
    for chunk in render_chunks(text, caps(Markup.PLAIN, 100)):
        lines = chunk.text.split("\n")
        assert all(line.startswith("• item number") for line in lines)


def test_long_prose_reply_fills_messages():
    paragraph = words(90) + "."
    text = "\n\n".join([paragraph] * 20)
    chunks = render_chunks(text, caps(Markup.TELEGRAM_HTML, 4096, "utf16"))
    assert all(2048 <= len(c.text) <= 4096 for c in chunks[:-1])
    assert "\n\n".join(c.plain for c in chunks) == text


def test_code_block_cut_prefers_a_blank_line():
    functions = [f"def step_{n}(value):\n    return value + {n}\n" for n in range(12)]
    code = "\n".join(functions).rstrip("\n")
    chunks = render_chunks(f"```python\n{code}\n```", caps(Markup.DISCORD_MARKDOWN, 200))
    assert len(chunks) > 1
    for chunk in chunks[:-1]:
        assert chunk.text.endswith("\n```")
        body = chunk.text.removeprefix("```python\n").removesuffix("\n```")
        assert body.startswith("def ") and body.endswith(tuple(f"+ {n}" for n in range(12)))


def test_quoted_code_block_keeps_quote_and_fence_on_both_sides_of_a_cut():
    code = "\n".join(f"> x_{n} = {n}" for n in range(20))
    chunks = render_chunks(f"> ```\n{code}\n> ```", caps(Markup.SLACK_MRKDWN, 80))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("> ```\n") and chunk.text.endswith("\n> ```")
        assert all(line.startswith("> ") for line in chunk.text.split("\n"))
