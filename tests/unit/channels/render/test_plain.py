"""Markdown → plain text (the console): markers stripped, code fences kept, text == plain."""

from __future__ import annotations

import pytest

from channels.adapter import Capabilities, Markup
from channels.render import render_chunks

PLAIN = Capabilities(max_len=20_000, len_unit="chars", markup=Markup.PLAIN)


def test_plain_strips_emphasis_and_keeps_code_fences():
    (chunk,) = render_chunks("# Hi\n\n**b** _i_ [l](https://x.y)\n\n```sh\nls -l\n```", PLAIN)
    assert chunk.text == "Hi\n\nb i l (https://x.y)\n\n```sh\nls -l\n```"
    assert chunk.plain == chunk.text


def test_plain_keeps_markup_characters_unescaped():
    (chunk,) = render_chunks("a < b & <@123> @everyone", PLAIN)
    assert chunk.text == "a < b & <@123> @everyone"


@pytest.mark.parametrize("blank", ["", "   ", "\n\n"])
def test_blank_reply_gives_no_chunks(blank):
    assert render_chunks(blank, PLAIN) == []


def test_too_small_limit_is_refused():
    with pytest.raises(ValueError, match="max_len"):
        render_chunks("x", Capabilities(max_len=8, len_unit="chars", markup=Markup.PLAIN))


def test_links_read_label_then_address():
    (chunk,) = render_chunks("[docs](https://x.y/ü) <https://x.y> <a@b.co>", PLAIN)
    assert chunk.text == "docs (https://x.y/ü) https://x.y a@b.co"
