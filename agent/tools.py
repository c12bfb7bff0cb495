"""The built-in tools every agent gets: `current_time`, `ask_clarification` and `send_file`.

Each tool has a sync and an async body. The agent runs under `ainvoke`, where an async body avoids
a thread hop per call; the sync body keeps the graph usable under `invoke` too.

`ask_clarification` pauses the run with LangGraph `interrupt()`. The pause is stored in the
checkpoint, so the answer may arrive in another process after a restart: resuming with
`Command(resume=answer)` re-enters the same tool call, `interrupt()` returns the answer, and the
model sees it as the tool result.

`send_file(name, content="", path="")` hands the user a file: `content` as UTF-8 text, or the
file at `path`, relative to the outbound-file directory (`<SWITCHBOARD_DATA_DIR>/files`, created
and checked at start-up by `agent.sandbox`, where tools may write). The path is opened component
by component without following symlinks (`agent.sandbox.open_inside`): no other file on the
machine can be read through it. Without a files directory (`files_dir=None`) only `content` is
accepted. The file travels as the tool message's artifact, never shown to the model: text as
`{name, mime, data_b64}`, a file on disk as a reference `{name, mime, size, path}` that is read
again when the turn's files are sent, so its bytes never enter the checkpoint. The runner
collects this turn's artifacts into `TurnResult.files` and the manager uploads them after the
reply (`agent/attachments.py`).
"""

from __future__ import annotations

import mimetypes
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import interrupt

from agent.attachments import (
    MAX_SEND_FILE_BYTES,
    SEND_FILE_TOOL,
    file_entry,
    file_reference,
    safe_file_name,
    sniff,
)
from agent.sandbox import FileRefused, read_head

__all__ = [
    "CLARIFICATION_TOOL",
    "MAX_SEND_FILE_BYTES",
    "SEND_FILE_TOOL",
    "TIME_TOOL",
    "ask_clarification",
    "builtin_tools",
    "current_time",
    "make_send_file",
    "send_file",
]

CLARIFICATION_TOOL = "ask_clarification"
TIME_TOOL = "current_time"

_TIME_DESCRIPTION = "Return the current date and time in UTC (ISO 8601)."
_CLARIFICATION_DESCRIPTION = (
    "Ask the user a question and wait for the answer before continuing. Use it when a detail is "
    "missing, the request is ambiguous, you need the user to pick an approach, or before a risky "
    "step. `options` are short choices the user can pick from; `clarification_type` is one of "
    "missing_info, ambiguous_requirement, approach_choice, risk_confirmation, suggestion; "
    "`context` says briefly why you ask. The tool result is the user's answer."
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _current_time_sync() -> str:
    return _now()


async def _current_time_async() -> str:
    return _now()


def _clarify(
    question: str,
    options: list[str] | None = None,
    clarification_type: str = "",
    context: str = "",
) -> str:
    answer: Any = interrupt(
        {
            "question": question,
            "options": [str(o) for o in options or ()],
            "clarification_type": clarification_type,
            "context": context,
        }
    )
    return answer if isinstance(answer, str) else str(answer)


async def _clarify_async(
    question: str,
    options: list[str] | None = None,
    clarification_type: str = "",
    context: str = "",
) -> str:
    return _clarify(question, options, clarification_type, context)


current_time: BaseTool = StructuredTool.from_function(
    func=_current_time_sync,
    coroutine=_current_time_async,
    name=TIME_TOOL,
    description=_TIME_DESCRIPTION,
)

ask_clarification: BaseTool = StructuredTool.from_function(
    func=_clarify,
    coroutine=_clarify_async,
    name=CLARIFICATION_TOOL,
    description=_CLARIFICATION_DESCRIPTION,
)


_SNIFF_BYTES = 8192  # what `filetype` looks at
_Artifact = dict[str, str | int] | dict[str, str] | None
_SEND_FILE_DESCRIPTION = (
    "Send the user a file in this chat (it is uploaded after your reply). `name` is the file "
    "name with its extension; give the file's text as `content`"
)


def make_send_file(files_dir: Path | None = None) -> BaseTool:
    """A `send_file` tool that reads paths only inside `files_dir` (none when it is None)."""
    root = files_dir
    description = _SEND_FILE_DESCRIPTION + (
        f", or the `path` of a file you wrote under {root}, relative to it. Returns a confirmation."
        if root is not None
        else ". Returns a confirmation."
    )

    def _send(name: str, content: str = "", path: str = "") -> tuple[str, _Artifact]:
        clean = safe_file_name(name, "file.txt")  # a name, never a path
        guessed = mimetypes.guess_type(clean)[0]
        if path:
            if root is None:
                return "Not sent: there is no files directory; give the text as content.", None
            try:
                head, size = read_head(root, path, _SNIFF_BYTES)
            except FileRefused as exc:
                return f"Not sent: {exc}.", None
            if size > MAX_SEND_FILE_BYTES:
                return "Not sent: the file is too large.", None
            mime = _mime(guessed, sniff(head))
            sent = f"Sent {clean} ({size:,} bytes) to the user."
            return sent, file_reference(clean, mime, size, path)
        data = content.encode("utf-8")
        if len(data) > MAX_SEND_FILE_BYTES:
            return "Not sent: the file is too large.", None
        mime = _mime(guessed, sniff(data))
        return f"Sent {clean} ({len(data):,} bytes) to the user.", file_entry(clean, mime, data)

    async def _send_async(name: str, content: str = "", path: str = "") -> tuple[str, _Artifact]:
        return _send(name, content, path)

    return StructuredTool.from_function(
        func=_send,
        coroutine=_send_async,
        name=SEND_FILE_TOOL,
        description=description,
        response_format="content_and_artifact",
    )


def _mime(guessed: str | None, sniffed: str) -> str:
    """The sniffed type, unless the bytes only say "text" or "unknown" and the name knows better
    (a `.csv` is text/csv)."""
    if sniffed in ("text/plain", "application/octet-stream") and guessed:
        return guessed
    return sniffed


send_file: BaseTool = make_send_file()  # text only: it knows no files directory


def builtin_tools(files_dir: Path | None = None) -> tuple[BaseTool, ...]:
    """`ask_clarification`, `current_time`, and a `send_file` reading inside `files_dir`."""
    send = send_file if files_dir is None else make_send_file(files_dir)
    return (ask_clarification, current_time, send)
