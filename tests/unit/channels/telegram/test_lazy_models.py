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


_CHANGED_AIOGRAM = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location(
    "channels.telegram.lazy_models", "channels/telegram/lazy_models.py"
)
lazy_models = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = lazy_models
spec.loader.exec_module(lazy_models)
hook = lazy_models._after_types_base


def newer_aiogram(module):
    # an aiogram whose rebuild loop no longer passes `_types_namespace=`
    hook(module)
    record = module.TelegramObject.__dict__["model_rebuild"].__func__

    def rebuild(cls, **kwargs):  # resolves names from its caller's frame, not a namespace
        kwargs.pop("_types_namespace", None)
        kwargs["_parent_namespace_depth"] = 3  # this stand-in is one frame more than aiogram
        return record(cls, **kwargs)

    module.TelegramObject.model_rebuild = classmethod(rebuild)


lazy_models._AFTER[lazy_models._TYPES_BASE] = newer_aiogram
import channels.telegram
from aiogram.types import Update

update = Update.model_validate({
    "update_id": 1,
    "message": {
        "message_id": 5, "date": 0, "chat": {"id": 7, "type": "private"}, "text": "hi",
        "from": {"id": 7, "is_bot": False, "first_name": "Ann"},
        "reply_to_message": {"message_id": 4, "date": 0, "chat": {"id": 7, "type": "private"}},
    },
})
print(json.dumps({"installed": lazy_models.installed(), "text": update.message.text}))
"""


def test_a_changed_rebuild_call_is_replayed_eagerly_so_updates_still_validate() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHANGED_AIOGRAM], cwd=_REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"installed": False, "text": "hi"}  # stepped aside: eager, and working
