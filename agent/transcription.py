"""Voice notes and audio files as text: what the user said reaches the model, which hears nothing.

`SWITCHBOARD_TRANSCRIBE_MODEL` (e.g. `openai:whisper-1` or `openai:gpt-4o-mini-transcribe`)
names a speech-to-text model on an OpenAI-compatible `/v1/audio/transcriptions` endpoint
(`OPENAI_BASE_URL`, `OPENAI_API_KEY`: OpenAI itself, or a local server such as faster-whisper's
or LocalAI's). A file whose bytes sniff as audio (or as a video, whose sound track the endpoint
reads: Telegram's round video notes) is sent once, before the turn, and `FileData.transcript`
carries the text; `agent.attachments` then gives the model `[audio: <name>, transcribed]` and the
transcript. Unset, or when a call fails, the file stays what it was: one line naming it, so a
turn never fails for its voice note (a failure is logged by file name and error, never the audio).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import structlog

from agent.attachments import sniff
from agent.result import FileData
from switchboard.errors import ConfigError

__all__ = ["OpenAITranscriber", "Transcriber", "build_transcriber", "with_transcripts"]

_log = structlog.get_logger(__name__)

TRANSCRIBE_TIMEOUT_S = 120.0  # a few minutes of speech; the turn timeout bounds the rest
_SPOKEN = ("audio/", "video/")


class Transcriber(Protocol):
    async def transcribe(self, file: FileData) -> str: ...


class OpenAITranscriber:
    """`POST /v1/audio/transcriptions` with the official SDK, one client for the process."""

    def __init__(self, model: str, *, base_url: str | None, api_key: str) -> None:
        import openai  # about 20 MB of RSS: paid only where transcription is configured

        self.model = model
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=TRANSCRIBE_TIMEOUT_S, max_retries=2
        )

    async def transcribe(self, file: FileData) -> str:
        result = await self._client.audio.transcriptions.create(
            model=self.model, file=(file.name or "audio", file.data, file.mime or "audio/ogg")
        )
        return result.text.strip()

    async def aclose(self) -> None:
        await self._client.close()


def build_transcriber(
    spec: str, *, openai_base_url: str | None, openai_api_key: str | None
) -> OpenAITranscriber | None:
    """The transcriber `SWITCHBOARD_TRANSCRIBE_MODEL` names, None when unset; `ConfigError` (one
    line) when it cannot work."""
    spec = spec.strip()
    if not spec:
        return None
    provider, _, model = spec.partition(":")
    if provider != "openai" or not model:
        raise ConfigError(
            f"SWITCHBOARD_TRANSCRIBE_MODEL={spec!r}: expected openai:<model>, e.g. openai:whisper-1"
        )
    key = openai_api_key or ("not-needed" if openai_base_url else None)
    if key is None:
        raise ConfigError("SWITCHBOARD_TRANSCRIBE_MODEL needs OPENAI_API_KEY (or OPENAI_BASE_URL)")
    return OpenAITranscriber(model, base_url=openai_base_url, api_key=key)


async def with_transcripts(
    files: Sequence[FileData], transcriber: Transcriber | None
) -> tuple[FileData, ...]:
    """The files, each spoken one carrying its transcript (transcribed concurrently)."""
    if transcriber is None or not files:
        return tuple(files)
    spoken = [i for i, f in enumerate(files) if f.transcript is None and _is_spoken(f)]
    if not spoken:
        return tuple(files)
    texts = await asyncio.gather(
        *(_transcribe(transcriber, files[i]) for i in spoken), return_exceptions=False
    )
    out = list(files)
    for index, text in zip(spoken, texts, strict=True):
        if text is not None:
            out[index] = replace(files[index], transcript=text)
    return tuple(out)


def _is_spoken(file: FileData) -> bool:
    return sniff(file.data).startswith(_SPOKEN)


async def _transcribe(transcriber: Transcriber, file: FileData) -> str | None:
    try:
        return await transcriber.transcribe(file)
    except Exception as exc:  # the file is then only named; the turn goes on
        _log.warning("transcription.failed", file=file.name, error=type(exc).__name__)
        return None
