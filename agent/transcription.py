"""Voice notes and audio files as text: what the user said reaches the model, which hears nothing.

`SWITCHBOARD_TRANSCRIBE_MODEL` (e.g. `openai:whisper-1` or `openai:gpt-4o-mini-transcribe`)
names a speech-to-text model on an OpenAI-compatible `/v1/audio/transcriptions` endpoint
(`OPENAI_BASE_URL`, `OPENAI_API_KEY`: OpenAI itself, or a local server such as faster-whisper's
or LocalAI's). A file whose bytes sniff as audio (or as a video, whose sound track the endpoint
reads: Telegram's round video notes) is sent once, before the turn, and `FileData.transcript`
carries the text; `agent.attachments` then gives the model `[audio: <name>, transcribed]` and the
transcript. Unset, or when a call fails, the file stays what it was: one line naming it, so a
turn never fails for its voice note (a failure is logged by file name and error, never the audio).

What one voice note may cost is bounded: its duration, read from the container's header without
decoding (`audio_seconds`: Ogg, WAV, MP4/M4A, FLAC, MP3; otherwise from its size at a high
bitrate), over `SWITCHBOARD_MAX_AUDIO_SECONDS` is not sent at all and the model is told why; a
failed call is retried once, and only for a file of at most `RETRY_MAX_BYTES` when the failure
says the upload can be tried again (a connection refused or reset, 429, 5xx): a big file is never
uploaded twice, a timed-out one (the server may be working on it) never; at most
`MAX_CONCURRENT_UPLOADS` uploads run at once per worker.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import structlog
import tenacity

from agent.attachments import sniff
from agent.result import FileData
from switchboard.errors import ConfigError

__all__ = [
    "MAX_AUDIO_SECONDS",
    "OpenAITranscriber",
    "Transcriber",
    "audio_seconds",
    "build_transcriber",
    "with_transcripts",
]

_log = structlog.get_logger(__name__)

TRANSCRIBE_TIMEOUT_S = 120.0  # a few minutes of speech; the turn timeout bounds the rest
MAX_AUDIO_SECONDS = 600.0  # `SWITCHBOARD_MAX_AUDIO_SECONDS`
RETRY_MAX_BYTES = 512 * 1024  # minutes of a voice note: worth one more upload, a 10 MB file not
MAX_CONCURRENT_UPLOADS = 4
_UNKNOWN_BYTES_PER_S = 32_000  # 256 kbit/s: a container we cannot read is timed by its size
_SPOKEN = ("audio/", "video/")


class Transcriber(Protocol):
    max_seconds: float
    """Longest audio this transcriber is sent."""

    async def transcribe(self, file: FileData) -> str: ...


class OpenAITranscriber:
    """`POST /v1/audio/transcriptions` with the official SDK, one client for the process."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str,
        max_seconds: float = MAX_AUDIO_SECONDS,
    ) -> None:
        import openai  # about 20 MB of RSS: paid only where transcription is configured

        self.model = model
        self.max_seconds = max_seconds
        # The SDK's own retries would upload the whole file again up to twice: ours decide.
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=TRANSCRIBE_TIMEOUT_S, max_retries=0
        )
        self._retryable = (openai.RateLimitError, openai.InternalServerError)
        self._connection = openai.APIConnectionError
        self._timeout = openai.APITimeoutError
        self._uploads = asyncio.Semaphore(MAX_CONCURRENT_UPLOADS)

    async def transcribe(self, file: FileData) -> str:
        retry = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(2 if len(file.data) <= RETRY_MAX_BYTES else 1),
            wait=tenacity.wait_random(0.5, 1.5),
            retry=tenacity.retry_if_exception(self._worth_retrying),
            reraise=True,
        )
        async for attempt in retry:
            with attempt:
                async with self._uploads:
                    result = await self._client.audio.transcriptions.create(
                        model=self.model,
                        file=(file.name or "audio", file.data, file.mime or "audio/ogg"),
                    )
        return result.text.strip()

    def _worth_retrying(self, exc: BaseException) -> bool:
        """A refused or reset connection, 429 or 5xx; never a timeout (the upload may be in)."""
        if isinstance(exc, self._timeout):
            return False
        return isinstance(exc, (*self._retryable, self._connection))

    async def aclose(self) -> None:
        await self._client.close()


def build_transcriber(
    spec: str,
    *,
    openai_base_url: str | None,
    openai_api_key: str | None,
    max_seconds: float = MAX_AUDIO_SECONDS,
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
    return OpenAITranscriber(model, base_url=openai_base_url, api_key=key, max_seconds=max_seconds)


async def with_transcripts(
    files: Sequence[FileData], transcriber: Transcriber | None
) -> tuple[FileData, ...]:
    """The files, each spoken one carrying its transcript (transcribed concurrently), or, when
    it is longer than the transcriber takes, a note saying so (it is never uploaded)."""
    if transcriber is None or not files:
        return tuple(files)
    out = list(files)
    spoken: list[int] = []
    for index, file in enumerate(files):
        if file.transcript is not None or not _is_spoken(file):
            continue
        seconds = audio_seconds(file.data)
        limit = transcriber.max_seconds
        if seconds is None and len(file.data) > limit * _UNKNOWN_BYTES_PER_S:
            seconds = len(file.data) / _UNKNOWN_BYTES_PER_S
        if seconds is not None and seconds > limit:
            _log.info("transcription.too_long", seconds=round(seconds), limit=limit)
            note = f"not transcribed: {_clock(seconds)} long, over the {_clock(limit)} limit"
            out[index] = replace(file, note=note)
            continue
        spoken.append(index)
    if not spoken:
        return tuple(out)
    texts = await asyncio.gather(*(_transcribe(transcriber, files[i]) for i in spoken))
    for index, text in zip(spoken, texts, strict=True):
        if text is not None:
            out[index] = replace(files[index], transcript=text)
    return tuple(out)


def audio_seconds(data: bytes) -> float | None:
    """How long the audio is, from its container's header (no decoding); None when the
    container is not one of Ogg (Opus, Vorbis), WAV, MP4/M4A/MOV, FLAC, MP3, or says nothing."""
    try:
        if data.startswith(b"OggS"):
            return _ogg_seconds(data)
        if data.startswith(b"RIFF") and data[8:12] == b"WAVE":
            return _wav_seconds(data)
        if data[4:8] == b"ftyp":
            return _mp4_seconds(data)
        if data.startswith(b"fLaC"):
            rate_and_samples = int.from_bytes(data[18:26], "big")
            rate = rate_and_samples >> 44
            samples = rate_and_samples & ((1 << 36) - 1)
            return samples / rate if rate and samples else None
        return _mp3_seconds(data)
    except (struct.error, IndexError, ValueError, ZeroDivisionError):
        return None


def _ogg_seconds(data: bytes) -> float | None:
    """The last page's granule position over the codec's rate (Opus: 48 kHz, after pre-skip)."""
    head = data[:512]
    if (at := head.find(b"OpusHead")) >= 0:
        rate, skip = 48_000, struct.unpack_from("<H", head, at + 10)[0]
    elif (at := head.find(b"\x01vorbis")) >= 0:
        rate, skip = struct.unpack_from("<I", head, at + 12)[0], 0
    else:
        return None
    end = len(data)
    while (page := data.rfind(b"OggS", 0, end)) >= 0:
        granule = struct.unpack_from("<q", data, page + 6)[0]
        if granule >= 0:
            return max(0, granule - skip) / rate if rate else None
        end = page
    return None


def _wav_seconds(data: bytes) -> float | None:
    offset, byte_rate, size = 12, 0, 0
    while offset + 8 <= len(data):
        kind = data[offset : offset + 4]
        (length,) = struct.unpack_from("<I", data, offset + 4)
        if kind == b"fmt ":
            (byte_rate,) = struct.unpack_from("<I", data, offset + 16)
        elif kind == b"data":
            size = min(length, len(data) - offset - 8)
            break
        offset += 8 + length + (length & 1)
    return size / byte_rate if byte_rate and size else None


def _mp4_seconds(data: bytes) -> float | None:
    """`mvhd`'s duration over its timescale, inside the top-level `moov` (first or last)."""
    moov = _box(data, 0, len(data), b"moov")
    mvhd = _box(data, moov[0], moov[1], b"mvhd") if moov else None
    if mvhd is None:
        return None
    start = mvhd[0]
    if data[start] == 1:
        scale, duration = struct.unpack_from(">IQ", data, start + 20)
    else:
        scale, duration = struct.unpack_from(">II", data, start + 12)
    return duration / scale if scale else None


def _box(data: bytes, start: int, end: int, kind: bytes) -> tuple[int, int] | None:
    """(body start, body end) of the first box `kind` between `start` and `end`."""
    offset = start
    while offset + 8 <= end:
        size, name = struct.unpack_from(">I4s", data, offset)
        header = 8
        if size == 1:
            (size,) = struct.unpack_from(">Q", data, offset + 8)
            header = 16
        elif size == 0:
            size = end - offset
        if size < header:
            return None
        if name == kind:
            return offset + header, min(offset + size, end)
        offset += size
    return None


_MP3_KBPS = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)  # MPEG-1 Layer III


def _mp3_seconds(data: bytes) -> float | None:
    """MPEG-1 Layer III at the first frame's bitrate (an ID3v2 tag skipped): exact for
    constant bitrate, an estimate for variable."""
    start = 0
    if data.startswith(b"ID3"):
        size = data[6:10]
        start = 10 + (size[0] << 21 | size[1] << 14 | size[2] << 7 | size[3])
    header = data[start : start + 4]
    if len(header) < 4 or header[0] != 0xFF or (header[1] & 0xFE) != 0xFA:
        return None
    index = header[2] >> 4
    kbps = _MP3_KBPS[index] if index < len(_MP3_KBPS) else 0
    return (len(data) - start) * 8 / (kbps * 1000) if kbps else None


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}" if whole >= 60 else f"{whole} s"


def _is_spoken(file: FileData) -> bool:
    return sniff(file.data).startswith(_SPOKEN)


async def _transcribe(transcriber: Transcriber, file: FileData) -> str | None:
    try:
        return await transcriber.transcribe(file)
    except Exception as exc:  # the file is then only named; the turn goes on
        _log.warning("transcription.failed", file=file.name, error=type(exc).__name__)
        return None
