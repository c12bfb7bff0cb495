"""Attachments through the built-in agent on the real Redis checkpointer: images reach the model
and the lean-checkpoint policy keeps only the last turns' images in the stored thread; files
the agent sends come back in `TurnResult.files` once, and their bytes leave the checkpoint."""

from __future__ import annotations

import uuid

from agent import AgentRuntime, TurnContext
from agent.attachments import KEEP_IMAGE_TURNS, split_content
from agent.demo import DEMO_FILE_TEXT
from agent.result import FileData
from tests.fakes.sample_files import png_bytes


def _ctx(*files: FileData) -> TurnContext:
    return TurnContext(user_id="u1", platform="console", files=files)


async def test_images_older_than_the_kept_turns_become_a_note_in_the_checkpoint(
    runtime: AgentRuntime,
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    for turn in range(KEEP_IMAGE_TURNS + 2):
        photo = FileData(f"p{turn}.png", "image/png", png_bytes(10 + turn, 10))
        result = await runtime.run_turn(thread, f"turn {turn}", _ctx(photo))
        assert result.reply_text == f"I see an image ({10 + turn}x10). You said: turn {turn}"
    await runtime.run_turn(thread, "hello", _ctx())
    humans = [m for m in await runtime.messages(thread) if m.type == "human"]
    images = [split_content(m.content)[2] for m in humans]
    assert images == [0, 0, 0, 1, 1, 0]  # the last KEEP_IMAGE_TURNS human turns keep theirs
    _, notes, _ = split_content(humans[0].content)
    assert notes == ["[image: p0.png, 10x10 — no longer kept]"]


async def test_sent_file_is_returned_once_and_its_bytes_leave_the_checkpoint(
    runtime: AgentRuntime,
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    result = await runtime.run_turn(thread, "file out.txt", _ctx())
    assert [(f.name, f.data) for f in result.files] == [("out.txt", DEMO_FILE_TEXT.encode())]
    later = await runtime.run_turn(thread, "hello", _ctx())
    assert later.files == ()
    tools = [m for m in await runtime.messages(thread) if m.type == "tool"]
    assert [t.artifact for t in tools] == [None]
