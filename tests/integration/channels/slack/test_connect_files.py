"""Slack Connect files end to end: a file shared from another organisation arrives as a stub
(`file_access: check_file_info`, no URL); the worker asks `files.info` for it and the model reads
it, so the user gets one answer instead of "I couldn't download the file" and an answer."""

from __future__ import annotations

from tests.integration.channels.slack.test_e2e import StackFactory, make_stack, mention, new_ts

__all__ = ["make_stack"]


async def test_a_slack_connect_file_is_fetched_through_files_info_and_read(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack()
    event = mention("read this", ts=new_ts())
    event["files"] = [
        stack.fake.add_connect_file(
            "minutes.txt", b"Budget approved for the spring launch", "text/plain"
        )
    ]
    await stack.say(event)
    await stack.settle(1)
    await stack.manager.idle()
    (reply,) = stack.replies()
    assert "Budget approved for the spring launch" in reply.params["text"], reply.params["text"]
    assert "minutes.txt" in reply.params["text"], reply.params["text"]
    assert "couldn't download" not in reply.params["text"]
    assert [c.params["file"] for c in stack.fake.calls_to("files.info")] == ["F00001"]
    assert stack.fake.downloads == ["F00001"]
