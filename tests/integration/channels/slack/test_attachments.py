"""Slack attachments end to end: files shared in a mention are read from `url_private` with the
bot token (the fake refuses any other), reach the demo model, and a file the agent makes is
uploaded with files_upload_v2 into the same thread."""

from __future__ import annotations

from agent.demo import DEMO_FILE_TEXT
from tests.fakes.sample_files import pdf_bytes, png_bytes
from tests.integration.channels.slack.test_e2e import StackFactory, make_stack, mention, new_ts

__all__ = ["make_stack"]  # the fixture, shared with the e2e suite


async def test_photo_with_text_in_a_mention_reaches_the_model_as_an_image(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack()
    ts = new_ts()
    event = mention("what is this?", ts=ts)
    event["files"] = [stack.fake.add_file("cat.png", png_bytes(2000, 1000), "image/png")]
    await stack.say(event)
    await stack.settle(1)
    (reply,) = stack.replies()
    assert reply.params["text"] == "I see an image (1568x784). You said: what is this?"
    assert reply.params["thread_ts"] == ts
    assert stack.fake.downloads == ["F00001"]


async def test_pdf_text_reaches_the_model_and_an_oversize_file_gets_a_notice(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack(max_attachment_mb=0.05)
    event = mention("read these", ts=new_ts())
    event["files"] = [
        stack.fake.add_file("q3.pdf", pdf_bytes("Revenue grew nine percent"), "application/pdf"),
        stack.fake.add_file("huge.zip", b"PK" * 10, "application/zip", size=9_000_000),
    ]
    await stack.say(event)
    await stack.settle(1)
    await stack.manager.idle()
    texts = [c.params["text"] for c in stack.replies()]
    assert texts == [
        "huge.zip (8.6 MB) is over my 0.05 MB limit for files, so I left it out.",
        "I read q3.pdf: Revenue grew nine percent You said: read these",
    ]
    assert stack.fake.downloads == ["F00001"]  # the big one was never fetched


async def test_file_made_by_the_agent_is_uploaded_into_the_thread(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack()
    ts = new_ts()
    await stack.say(mention("file notes.md", ts=ts))
    await stack.settle(1)
    assert [c.params["text"] for c in stack.replies()] == ["Here is notes.md."]
    (upload,) = stack.fake.uploads
    assert upload["filename"] == "notes.md" and upload["data"] == DEMO_FILE_TEXT.encode()
    assert upload["channel"] == "C1" and upload["thread_ts"] == ts
