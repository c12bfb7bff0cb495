"""Voice notes to text with the real openai SDK against the fake server's
`/v1/audio/transcriptions`: spoken files get their transcript, other files are left alone, and a
failed call leaves the file as it was instead of failing the turn."""

from __future__ import annotations

import pytest

from agent.attachments import content_blocks
from agent.result import FileData
from agent.transcription import build_transcriber, with_transcripts
from switchboard.errors import ConfigError
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.fakes.sample_files import ogg_opus_bytes, png_bytes

VOICE = FileData(name="voice.ogg", mime="audio/ogg", data=b"OggS turn the lights off please")


def transcriber(server: FakeOpenAI):  # type: ignore[no-untyped-def]
    built = build_transcriber(
        "openai:whisper-1", openai_base_url=server.base_url, openai_api_key=API_KEY
    )
    assert built is not None
    return built


async def test_a_voice_note_gets_its_transcript_and_reaches_the_model_as_text(
    openai_server: FakeOpenAI,
) -> None:
    image = FileData(name="photo.png", mime="image/png", data=png_bytes(4, 4))
    voice, photo = await with_transcripts([VOICE, image], transcriber(openai_server))
    assert voice.transcript == "turn the lights off please"
    assert photo == image  # not spoken: untouched, and never sent to be transcribed
    assert openai_server.transcriptions == [("whisper-1", "voice.ogg", len(VOICE.data))]
    [block] = content_blocks(voice)
    assert block["text"] == "[audio: voice.ogg, transcribed]\nturn the lights off please"


async def test_a_failed_transcription_leaves_the_file_named_and_the_turn_going(
    openai_server: FakeOpenAI,
) -> None:
    openai_server.transcribe_status = 500
    [voice] = await with_transcripts([VOICE], transcriber(openai_server))
    assert voice.transcript is None
    [block] = content_blocks(voice)
    assert block["text"].startswith("[file: voice.ogg (audio/ogg,")
    assert "not readable" in block["text"]


async def test_without_a_transcriber_files_pass_unchanged() -> None:
    assert await with_transcripts([VOICE], None) == (VOICE,)


def test_an_unusable_transcribe_model_is_a_one_line_config_error() -> None:
    assert build_transcriber("", openai_base_url=None, openai_api_key=None) is None
    with pytest.raises(ConfigError, match="expected openai:<model>"):
        build_transcriber("anthropic:claude", openai_base_url=None, openai_api_key="k")
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
        build_transcriber("openai:whisper-1", openai_base_url=None, openai_api_key=None)


async def test_a_voice_note_longer_than_the_cap_is_never_uploaded_and_the_model_is_told(
    openai_server: FakeOpenAI,
) -> None:
    long_note = FileData("long.ogg", "audio/ogg", ogg_opus_bytes(20 * 60))
    built = build_transcriber(
        "openai:whisper-1",
        openai_base_url=openai_server.base_url,
        openai_api_key=API_KEY,
        max_seconds=600,
    )
    assert built is not None
    [voice] = await with_transcripts([long_note], built)
    assert openai_server.transcriptions == []
    [block] = content_blocks(voice)
    assert block["text"] == (
        f"[file: long.ogg (audio/ogg, {len(long_note.data):,} bytes): "
        "not transcribed: 20:00 long, over the 10:00 limit]"
    )


async def test_a_failed_upload_of_a_big_voice_note_is_not_repeated(
    openai_server: FakeOpenAI,
) -> None:
    openai_server.transcribe_status = 500
    big = FileData("big.ogg", "audio/ogg", ogg_opus_bytes(300, size=800 * 1024))
    [voice] = await with_transcripts([big], transcriber(openai_server))
    assert voice.transcript is None
    assert len(openai_server.transcriptions) == 1  # the SDK's own retries sent it three times


async def test_a_failed_upload_of_a_short_voice_note_is_tried_once_more(
    openai_server: FakeOpenAI,
) -> None:
    openai_server.transcribe_status = 500
    await with_transcripts([VOICE], transcriber(openai_server))
    assert len(openai_server.transcriptions) == 2
