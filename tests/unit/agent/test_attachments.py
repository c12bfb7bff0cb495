"""Files as content blocks (sniffed from bytes), the lean-checkpoint rewrite, files out of a
turn's state, `send_file`'s path rule and what the demo model says about attachments."""

from __future__ import annotations

import base64
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent.attachments import (
    MAX_IMAGE_SIDE,
    content_blocks,
    file_entry,
    human_content,
    lean_messages,
    sniff,
    split_content,
    turn_files,
)
from agent.demo import DemoChatModel
from agent.result import FileData
from agent.tools import make_send_file
from tests.fakes.sample_files import pdf_bytes, png_bytes


def test_type_comes_from_the_bytes_not_the_name() -> None:
    pdf_named_png = FileData("cat.png", "image/png", pdf_bytes("hello from inside"))
    (block,) = content_blocks(pdf_named_png)
    assert block["text"].startswith("[file: cat.png (PDF, 1 pages)]")
    exe_named_txt = FileData("notes.txt", "text/plain", b"MZ\x90\x00\x03\x00\x00\x00" * 8)
    (block,) = content_blocks(exe_named_txt)
    assert "not readable by me" in block["text"] and sniff(exe_named_txt.data) != "text/plain"


def test_big_image_is_downscaled_to_the_long_side_limit() -> None:
    note, image = content_blocks(FileData("wide.png", "", png_bytes(4000, 1000)))
    assert note["text"] == f"[image: wide.png, {MAX_IMAGE_SIDE}x392]"
    assert image["type"] == "image" and image["mime_type"] == "image/jpeg"
    assert base64.b64decode(image["base64"])[:2] == b"\xff\xd8"
    small_note, small = content_blocks(FileData("s.png", "", png_bytes(20, 10)))
    assert small_note["text"] == "[image: s.png, 20x10]" and small["mime_type"] == "image/png"


def test_text_is_capped_and_the_user_words_come_first() -> None:
    content = human_content("summarise", [FileData("log.txt", "text/plain", b"x" * 30_000)])
    assert isinstance(content, list) and content[0] == {"type": "text", "text": "summarise"}
    assert "more characters]" in content[1]["text"] and len(content[1]["text"]) < 21_000
    words, notes, images = split_content(content)
    assert words == "summarise" and len(notes) == 1 and images == 0


def test_lean_rewrite_drops_old_images_and_sent_file_artifacts() -> None:
    history = []
    for turn in range(5):
        content = human_content(f"t{turn}", [FileData(f"p{turn}.png", "", png_bytes(4, 4))])
        history.append(HumanMessage(content=content, id=f"h{turn}"))
        history.append(AIMessage(content="ok", id=f"a{turn}"))
    history.insert(
        2,
        ToolMessage(
            "Sent",
            tool_call_id="c",
            name="send_file",
            id="t0",
            artifact=file_entry("a.txt", "text/plain", b"a"),
        ),
    )
    changed = lean_messages(history, keep_turns=3, max_images=2)
    ids = [m.id for m in changed]
    assert ids == ["h0", "t0", "h1", "h2"]  # h2 is recent but over the thread cap of 2
    assert changed[1].artifact is None
    words, notes, images = split_content(changed[0].content)
    assert words == "t0" and notes == ["[image: p0.png, 4x4 — no longer kept]"] and images == 0
    rewritten = {m.id: m for m in changed}
    final = [rewritten.get(m.id, m) for m in history]
    assert lean_messages(final, keep_turns=3, max_images=2) == []


def test_turn_files_are_this_turns_artifacts_and_the_state_key() -> None:
    old = ToolMessage(
        "Sent",
        tool_call_id="1",
        name="send_file",
        artifact=file_entry("old.txt", "text/plain", b"old"),
    )
    new = ToolMessage(
        "Sent",
        tool_call_id="2",
        name="send_file",
        artifact=file_entry("new.txt", "text/plain", b"new"),
    )
    output = {
        "messages": [HumanMessage("a"), old, AIMessage("x"), HumanMessage("b"), new],
        "files": [file_entry("chart.png", "image/png", b"\x89PNG"), {"data_b64": "!!"}],
    }
    assert [(f.name, f.data) for f in turn_files(output)] == [
        ("new.txt", b"new"),
        ("chart.png", b"\x89PNG"),
    ]


def test_send_file_reads_only_inside_its_directory(tmp_path: Path) -> None:
    root = tmp_path / "files"
    root.mkdir()
    (root / "report.csv").write_text("a,b\n1,2\n")
    (tmp_path / "secret").write_text("token")
    (root / "link").symlink_to(tmp_path / "secret")
    tool = make_send_file(root)
    ok = tool.invoke(
        {
            "type": "tool_call",
            "id": "1",
            "name": "send_file",
            "args": {"name": "r.csv", "path": "report.csv"},
        }
    )
    assert (
        ok.artifact["name"] == "r.csv"
        and base64.b64decode(ok.artifact["data_b64"]) == b"a,b\n1,2\n"
    )
    for path in ("../secret", "link", "/etc/passwd", "missing"):
        refused = tool.invoke(
            {
                "type": "tool_call",
                "id": "2",
                "name": "send_file",
                "args": {"name": "x", "path": path},
            }
        )
        assert refused.artifact is None and refused.content.startswith("Not sent")
    inline = tool.invoke(
        {
            "type": "tool_call",
            "id": "3",
            "name": "send_file",
            "args": {"name": "../../n.md", "content": "# hi"},
        }
    )
    assert inline.artifact["name"] == "n.md" and inline.artifact["mime"] == "text/markdown"


def test_demo_model_describes_images_and_files_then_the_caption() -> None:
    files = [
        FileData("p.png", "", png_bytes(30, 20)),
        FileData(
            "r.pdf", "", pdf_bytes("Quarterly revenue grew by nine percent overall this year")
        ),
    ]
    reply = DemoChatModel().invoke([HumanMessage(content=human_content("look", files))])
    assert reply.content == (
        "I see an image (30x20). I read r.pdf: Quarterly revenue grew by nine percent overall "
        "this You said: look"
    )
    echo = DemoChatModel().invoke([HumanMessage(content=human_content("echo hi", files))])
    assert echo.content == "hi"
