"""The built-in tools every agent gets: `current_time`, `ask_clarification` and `send_file`.

Each tool has a sync and an async body. The agent runs under `ainvoke`, where an async body avoids
a thread hop per call; the sync body keeps the graph usable under `invoke` too.

`ask_clarification` pauses the run with LangGraph `interrupt()`. The pause is stored in the
checkpoint, so the answer may arrive in another process after a restart: resuming with
`Command(resume=answer)` re-enters the same tool call, `interrupt()` returns the answer, and the
model sees it as the tool result.

`send_file(name, content="", path="")` hands the user a file: `content` as UTF-8 text, or the
bytes of `path`, which must resolve (symlinks followed) to a regular file inside `FILES_DIR`
(`<temp dir>/switchboard-files`, where tools may write): no other path on the machine can be
read through it. The file travels as the tool message's artifact (`{name, mime, data_b64}`,
never shown to the model); the runner collects this turn's artifacts into `TurnResult.files`
and the manager uploads them after the reply (`agent/attachments.py`).
"""

from __future__ import annotations

import mimetypes
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import interrupt

from agent.attachments import SEND_FILE_TOOL, file_entry, sniff

__all__ = [
    "CLARIFICATION_TOOL",
    "FILES_DIR",
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


FILES_DIR = Path(tempfile.gettempdir()) / "switchboard-files"
MAX_SEND_FILE_BYTES = 50 * 1024 * 1024  # the largest any platform takes from a bot (Telegram)
_SEND_FILE_DESCRIPTION = (
    "Send the user a file in this chat (it is uploaded after your reply). `name` is the file "
    "name with its extension; give the file's text as `content`, or `path` of a file you wrote "
    "under the shared files directory. Returns a confirmation."
)


def make_send_file(files_dir: Path = FILES_DIR) -> BaseTool:
    """A `send_file` tool that reads paths only inside `files_dir`."""
    root = files_dir

    def _send(name: str, content: str = "", path: str = "") -> tuple[str, dict[str, str] | None]:
        clean = Path(name).name.strip() or "file.txt"  # a name, never a path
        if path:
            try:
                resolved = (root / path).resolve(strict=True)
                inside = resolved.is_relative_to(root.resolve())
            except (OSError, RuntimeError, ValueError):
                return f"Not sent: {path} does not exist.", None
            if not inside or not resolved.is_file():
                return f"Not sent: only files under {root} can be sent.", None
            if resolved.stat().st_size > MAX_SEND_FILE_BYTES:
                return "Not sent: the file is too large.", None
            data = resolved.read_bytes()
        else:
            data = content.encode("utf-8")
            if len(data) > MAX_SEND_FILE_BYTES:
                return "Not sent: the file is too large.", None
        guessed = mimetypes.guess_type(clean)[0]
        sniffed = sniff(data)
        mime = (
            guessed
            if sniffed in ("text/plain", "application/octet-stream") and guessed
            else sniffed
        )
        return f"Sent {clean} ({len(data):,} bytes) to the user.", file_entry(clean, mime, data)

    async def _send_async(
        name: str, content: str = "", path: str = ""
    ) -> tuple[str, dict[str, str] | None]:
        return _send(name, content, path)

    return StructuredTool.from_function(
        func=_send,
        coroutine=_send_async,
        name=SEND_FILE_TOOL,
        description=_SEND_FILE_DESCRIPTION,
        response_format="content_and_artifact",
    )


send_file: BaseTool = make_send_file()


def builtin_tools() -> tuple[BaseTool, ...]:
    return (ask_clarification, current_time, send_file)
