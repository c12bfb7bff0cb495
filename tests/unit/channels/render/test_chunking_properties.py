"""Property tests: for any markdown-ish reply and any limit, every chunk fits after rendering,
nothing is lost, and every chunk is well-formed on its own."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from channels.adapter import Capabilities, Chunk, Markup
from channels.render import render_chunks
from channels.render.chunking import measure_fn

RUNS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TELEGRAM_TAGS = {"b", "i", "s", "u", "code", "pre", "a", "blockquote"}

# Free text has no digits (ordered lists renumber), `;` (entities decode), `\` (escapes vanish),
# `:` (link definitions vanish) or `~` (`~~~` opens a fence): markdown that drops or rewrites
# characters by design would make the content check meaningless.
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ODD = "&<>*_[]()#@!?.,'\"|-+ éßж中"
_ASTRAL = ["😀", "👍🏽", "𝔘", "👨‍👩‍👧", "🇩🇪", "e\u0301"]

word = st.text(alphabet=_LETTERS + _ODD, min_size=1, max_size=12) | st.sampled_from(_ASTRAL)
long_word = st.text(alphabet=_LETTERS + "😀", min_size=40, max_size=300)
inline = st.one_of(
    word,
    word,
    word,
    long_word,
    word.map(lambda w: f"**{w}**"),
    word.map(lambda w: f"_{w}_"),
    word.map(lambda w: f"~~{w}~~"),
    word.map(lambda w: f"`{w.replace('`', '')}`"),
    word.map(lambda w: f"[{w.replace('[', '').replace(']', '')}](https://example.com/a_b?x=1&y=2)"),
    st.just("<https://example.com/auto>"),
    st.sampled_from(["@everyone", "@here", "<@123>", "<@&45>", "<#67>", "<!channel>", "<@U12>"]),
    st.sampled_from([". ", "! ", "? ", "。"]),
)
line = st.lists(inline, min_size=1, max_size=25).map(" ".join)
code_line = st.text(alphabet=_LETTERS + " <>&=(){}'\"😀", max_size=60)
block = st.one_of(
    line,
    line,
    line,
    line.map(lambda t: "# " + t),
    line.map(lambda t: "> " + t),
    st.lists(line, min_size=1, max_size=4).map(lambda ls: "\n".join("- " + x for x in ls)),
    st.tuples(st.sampled_from(["", "python", "js"]), st.lists(code_line, max_size=12)).map(
        lambda t: f"```{t[0]}\n" + "\n".join(t[1]) + "\n```"
    ),
)
block = block | block.map(lambda b: "> " + b.replace("\n", "\n> "))
document = st.lists(st.tuples(block, st.sampled_from(["\n\n", "\n"])), min_size=1, max_size=8).map(
    lambda parts: "".join(b + sep for b, sep in parts)
)
limit = st.integers(min_value=40, max_value=400)


def _caps(markup: Markup, max_len: int, unit: str) -> Capabilities:
    return Capabilities(max_len=max_len, len_unit=unit, markup=markup)  # type: ignore[arg-type]


def _alnum(text: str) -> str:
    """The ASCII letters and digits of `text`, with code fence markers (which a cut repeats)
    removed: the content a reader must find across the chunks."""
    return "".join(re.findall(r"[A-Za-z0-9]", re.sub(r"```[a-z]*", "", text)))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", re.sub(r"```[a-z]*", "", text))


def _check_content(markdown: str, chunks: list[Chunk], markup: Markup) -> None:
    joined = "\n".join(c.plain for c in chunks)
    whole = "\n".join(c.plain for c in render_chunks(markdown, _caps(markup, 10**9, "chars")))
    assert _squash(joined) == _squash(whole)
    assert _alnum(joined) == _alnum(markdown)


class _TagBalance(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in TELEGRAM_TAGS:
            self.problems.append(f"tag {tag}")
        self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.problems.append(f"unbalanced </{tag}>")

    def handle_entityref(self, name):
        if name not in ("amp", "lt", "gt", "quot"):
            self.problems.append(f"entity {name}")


def _check_well_formed(chunk: Chunk, markup: Markup, max_len: int) -> None:
    text = chunk.text
    if markup is Markup.TELEGRAM_HTML:
        parser = _TagBalance()
        parser.feed(text)
        parser.close()
        assert parser.problems == [] and parser.stack == [], text
        assert re.search(r"&(?!amp;|lt;|gt;|quot;|#x27;)", text) is None, text
        assert measure_fn("utf16")(chunk.plain) <= max_len  # the plain fallback fits too
    elif markup is Markup.SLACK_MRKDWN:
        assert text.count("```") % 2 == 0, text
        assert re.search(r"<[!@#]", text) is None, text
    elif markup is Markup.DISCORD_MARKDOWN:
        assert text.count("```") % 2 == 0, text
        assert re.search(r"@(everyone|here)|<[@#][!&]?\d", text) is None, text
    else:
        assert text == chunk.plain


@pytest.mark.parametrize(
    ("markup", "unit"),
    [
        (Markup.TELEGRAM_HTML, "utf16"),
        (Markup.SLACK_MRKDWN, "chars"),
        (Markup.DISCORD_MARKDOWN, "chars"),
        (Markup.PLAIN, "chars"),
    ],
)
@RUNS
@given(markdown=document, max_len=limit)
def test_every_chunk_fits_is_well_formed_and_no_content_is_lost(markup, unit, markdown, max_len):
    """Fits: measured in the platform's unit after escaping. Well-formed: balanced Telegram
    tags and entities, balanced fences, no live mentions. Content: the chunks' plain text
    holds every letter of the input, in order."""
    measure = measure_fn(unit)
    chunks = render_chunks(markdown, _caps(markup, max_len, unit))
    assert chunks or not _alnum(markdown)
    for chunk in chunks:
        assert measure(chunk.text) <= max_len
        assert chunk.text.strip()
        _check_well_formed(chunk, markup, max_len)
    _check_content(markdown, chunks, markup)


@RUNS
@given(text=st.lists(word | long_word, min_size=1, max_size=200).map(" ".join), max_len=limit)
def test_prose_words_survive_in_order(text, max_len):
    chunks = render_chunks(text, _caps(Markup.PLAIN, max_len, "chars"))
    assert _alnum("".join(c.plain for c in chunks)) == _alnum(text)
