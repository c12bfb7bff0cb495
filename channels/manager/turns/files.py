"""Files at turn time: the batch's attachments fetched for the agent, the agent's files uploaded.

Why here and not in the adapters: the inbox and thread queues carry references only, so a turn
reads the bytes once, when it runs (a queued message keeps its attachments in its payload), and
the size limit (`SWITCHBOARD_MAX_ATTACHMENT_MB`) is the operator's, not the platform's. A file
that is too big or cannot be read gets a short notice naming it; the rest of the batch still goes
to the agent. Outgoing files follow the reply, each as a native upload. A file that does not
go out is named in the chat instead, with why in plain words: "(I couldn't attach report.pdf:
it is larger than this chat allows.)" (`not_attached`). This is the one place that is said, for
every platform: a file the sandbox refused when it was read for sending (it arrives with no
bytes and the reason as its `note`, `agent.attachments.refused_file`), one over the platform's
upload limit, one the platform refused, and one whose upload failed (an outage: the user may
ask again).
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from agent.result import FileData
from channels.adapter import Adapter, DescribesFiles, FetchesFiles, SendsFiles
from channels.manager.replies.responder import Responder
from channels.message import InboundMessage, ReplyTarget
from switchboard.errors import FileTooLarge, PlatformError, is_transient

__all__ = ["fetch_batch_files", "not_attached", "send_turn_files"]

_log = structlog.get_logger(__name__)
_MB = 1024 * 1024


async def fetch_batch_files(
    adapter: Adapter, messages: Sequence[InboundMessage], max_bytes: int
) -> tuple[list[FileData], list[str]]:
    """The batch's files in message order, and one notice per file left out."""
    wanted = [a for m in messages for a in m.attachments if a.kind != "sticker"]
    if not wanted:
        return [], []
    if not isinstance(adapter, FetchesFiles):
        return [], ["I can't open files sent here yet, so I only read the text."]
    files: list[FileData] = []
    notices: list[str] = []
    for attachment in wanted:
        name = attachment.name or "the file"
        try:
            if isinstance(adapter, DescribesFiles):
                attachment = await adapter.describe(attachment)
                name = attachment.name or name
            data = await adapter.fetch(attachment, max_bytes)
        except FileTooLarge as exc:
            _log.info("attachment.too_large", size=exc.size, limit=max_bytes)
            size = f" ({exc.size / _MB:.1f} MB)" if exc.size else ""
            notices.append(
                f"{name}{size} is over my {_mb(max_bytes)} MB limit for files, so I left it out."
            )
            continue
        except PlatformError as exc:
            _log.warning("attachment.fetch_failed", code=exc.code)
            notices.append(f"I couldn't download {name}, so I left it out.")
            continue
        files.append(FileData(name=attachment.name, mime=attachment.mime, data=data))
    _log.info("attachment.fetched", count=len(files), refused=len(notices))
    return files, notices


async def send_turn_files(
    adapter: Adapter, target: ReplyTarget, files: Sequence[FileData], say: Responder
) -> list[str]:
    """Upload the agent's files after its reply; the ids of the messages they became. Each file
    that is not sent is named in one short line instead (module docstring)."""
    if not files:
        return []
    if not isinstance(adapter, SendsFiles):
        await say.send_text(adapter, target, "I made a file for you, but I can't send files here.")
        return []
    ids: list[str] = []
    refused = 0
    for file in files:
        name = file.name or "file"
        why = _refusal(file, adapter.max_upload_bytes)
        if why is None:
            try:
                sent = await adapter.send_file(target, name, file.data, file.mime)
            except PlatformError as exc:
                _log.warning("file.upload_failed", code=exc.code)
                why = _platform_refusal(exc)
            else:
                ids.extend(sent.message_ids)
                continue
        refused += 1
        await say.send_text(adapter, target, not_attached(name, why))
    _log.info("file.sent", count=len(files) - refused, refused=refused)
    return ids


def not_attached(name: str, why: str) -> str:
    """The line the chat gets for a file that was not sent."""
    return f"(I couldn't attach {name}: {why}.)"


def _refusal(file: FileData, limit: int) -> str | None:
    """Why the file cannot go out before any upload is tried; None when it can."""
    if file.note:  # refused when it was read for sending; the note says why
        _log.info("file.refused_before_upload")
        return file.note
    if len(file.data) > limit:
        _log.info("file.over_upload_limit", size=len(file.data), limit=limit)
        return f"it is {len(file.data) / _MB:.1f} MB, over this chat's {_mb(limit)} MB limit"
    return None


def _platform_refusal(exc: PlatformError) -> str:
    if isinstance(exc, FileTooLarge) or exc.code == 413:
        return "it is larger than this chat allows"
    if is_transient(exc):
        return "the upload did not go through, so please ask again"
    return "the chat refused the upload"


def _mb(size: int) -> str:
    return f"{round(size / _MB, 2):g}"
