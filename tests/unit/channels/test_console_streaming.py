"""The console prints a streamed reply as it is written and ends with exactly what `send` prints."""

from __future__ import annotations

import io

from channels.console import LIMITS, ConsoleAdapter
from channels.message import Platform, ReplyTarget
from channels.render import render_chunks

TARGET = ReplyTarget(platform=Platform.CONSOLE, chat_id="local")
REPLY = (
    "Hello there, this is **the answer** you wanted.\n\n```python\ndef f(x):\n    return x\n```\n\n"
    "- one item\n- [a link](https://example.com)\n\nThe end."
)


async def no_deliver(msg: object) -> None:
    return None


def console() -> tuple[ConsoleAdapter, io.StringIO]:
    out = io.StringIO()
    return ConsoleAdapter(deliver=no_deliver, stdin=io.StringIO(), stdout=out), out


async def test_tokens_are_printed_as_they_arrive_and_the_end_matches_send() -> None:
    adapter, out = console()
    stream = adapter.open_stream(TARGET)
    growth = []
    for end in range(1, len(REPLY) + 1):
        await stream.update(REPLY[:end])
        growth.append(len(out.getvalue()))
    final = render_chunks(REPLY, LIMITS)
    await stream.finish(final)
    streamed = out.getvalue()
    assert len(set(growth)) > 20  # printed in many steps, not at the end

    plain, plain_out = console()
    await plain.send(TARGET, final)
    assert streamed == plain_out.getvalue()


async def test_status_before_text_and_cancel_with_and_without_a_note() -> None:
    adapter, out = console()
    stream = adapter.open_stream(TARGET)
    await stream.status("Using current_time…")
    await stream.update("Partial answer so far")
    assert await stream.cancel("(stopped)") is not None
    assert out.getvalue() == "… Using current_time…\nbot> Partial answer so far (stopped)\n"

    adapter, out = console()
    stream = adapter.open_stream(TARGET)
    assert await stream.cancel() is None
    assert out.getvalue() == ""
