"""What a service pays at start-up for SDKs it may never use: a model SDK is imported only
by the configuration that needs it (the openai SDK alone is about 20 MB of RSS)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parents[3]
_MODEL_SDKS = ("openai", "langchain_openai", "anthropic", "langchain_anthropic")


def _imported_after(code: str) -> dict[str, bool]:
    probe = f"import json, sys\n{code}\nprint(json.dumps({{m: m in sys.modules for m in {_MODEL_SDKS!r}}}))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=_REPO, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_service_imports_no_model_sdk_until_a_model_needs_one() -> None:
    startup = "import service.app, service.cli\nfrom agent import build_model, build_transcriber"
    assert not any(_imported_after(startup).values())

    demo = f"{startup}\nbuild_model('demo', openai_base_url=None, openai_api_key=None, anthropic_api_key=None)"
    assert not any(_imported_after(demo).values())


def test_an_openai_model_or_transcriber_brings_the_openai_sdk() -> None:
    model = (
        "from agent import build_model\n"
        "build_model('openai:m', openai_base_url='http://127.0.0.1:9/v1', openai_api_key=None,"
        " anthropic_api_key=None)"
    )
    assert _imported_after(model)["openai"]
    transcriber = (
        "from agent import build_transcriber\n"
        "build_transcriber('openai:whisper-1', openai_base_url='http://127.0.0.1:9/v1',"
        " openai_api_key=None)"
    )
    assert _imported_after(transcriber)["openai"]
