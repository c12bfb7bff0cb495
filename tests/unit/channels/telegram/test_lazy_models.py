"""aiogram's models build on first use (`channels.telegram.lazy_models`), and every one of them
still builds: each forward reference resolves in the recorded namespace.

Runs in a fresh interpreter: the hook only works when `channels.telegram` is imported before
aiogram, which this test process cannot promise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parents[4]

_PROBE = """
import json
import channels.telegram
from channels.telegram import lazy_models
from aiogram.methods import SendMessage, TelegramMethod
from aiogram.methods.base import Response
from aiogram.types import Message, TelegramObject, Update

out = {"installed": lazy_models.installed(), "built_at_import": Message.__pydantic_complete__}
update = Update.model_validate({
    "update_id": 1,
    "message": {
        "message_id": 5, "date": 0, "chat": {"id": 7, "type": "private"}, "text": "hi",
        "from": {"id": 7, "is_bot": False, "first_name": "Ann"},
        "reply_to_message": {"message_id": 4, "date": 0, "chat": {"id": 7, "type": "private"}},
    },
})
out["text"] = update.message.text
sent = Response[Message].model_validate(
    {"ok": True, "result": {"message_id": 6, "date": 0, "chat": {"id": 7, "type": "private"}}}
)
out["sent"] = sent.result.message_id
out["method"] = SendMessage(chat_id=7, text="x", parse_mode="HTML").text
failed = []
models = [*lazy_models._all_subclasses(TelegramObject), *lazy_models._all_subclasses(TelegramMethod)]
for model in models:
    if model.__pydantic_generic_metadata__.get("parameters"):
        continue
    try:
        model.model_rebuild()
        model.__pydantic_validator__.validate_python  # a mock raises here if it cannot build
    except Exception as exc:
        failed.append(f"{model.__name__}: {exc}")
out["models"], out["failed"] = len(models), failed
print(json.dumps(out))
"""


def test_aiogram_models_are_deferred_and_every_one_builds() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=_REPO, capture_output=True, text=True, check=True
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["installed"] is True
    assert out["built_at_import"] is False
    assert (out["text"], out["sent"], out["method"]) == ("hi", 6, "x")
    assert out["models"] > 400
    assert out["failed"] == []
