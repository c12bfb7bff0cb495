"""OpenAI chat requests whose messages and tools go out as langchain built them.

Before sending a chat completion, the openai SDK walks every parameter against its TypedDicts
(`async_maybe_transform`): about 0.15 ms of CPU per message on a 2-core machine, so 9 ms for a
60-message thread on every model call, more than the rest of a turn and growing with the thread.
For chat completions the walk changes nothing in data that is already plain JSON (no chat
request type has an alias or a format), and langchain-openai builds the messages and tools as
plain JSON. So they ride in `extra_body`, which the SDK merges into the request body as it is
(documented: its values take precedence over the arguments), and the walk sees an empty list.

Anything else goes the SDK's way: messages or tools holding a non-JSON value (a pydantic model,
an omitted marker, a tuple), or an `extra_body` of the caller's that already names them. The
wrapper keeps ChatOpenAI's public `client`/`async_client` fields working as before: every other
attribute is the SDK resource's own, so an upgrade that stops calling `create` loses only speed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PlainJsonCompletions", "as_extra_body", "send_plain_json"]

_MOVED = ("messages", "tools")
_SCALARS = (str, int, float, bool, type(None))


def send_plain_json(model: Any) -> None:
    """Wrap a langchain-openai chat model's completion resources (sync and async) in place."""
    for field in ("client", "async_client"):
        resource = getattr(model, field, None)
        if resource is not None and not isinstance(resource, PlainJsonCompletions):
            setattr(model, field, PlainJsonCompletions(resource))


class PlainJsonCompletions:
    """`chat.completions` (sync or async) whose `create` sends plain messages and tools as is."""

    def __init__(self, completions: Any) -> None:
        self._completions = completions

    def create(self, **params: Any) -> Any:
        return self._completions.create(**as_extra_body(params))

    @property
    def with_raw_response(self) -> _RawResponse:
        return _RawResponse(self._completions.with_raw_response)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._completions, name)


class _RawResponse:
    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def create(self, **params: Any) -> Any:
        return self._raw.create(**as_extra_body(params))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def as_extra_body(params: dict[str, Any]) -> dict[str, Any]:
    """The same request with its plain-JSON messages and tools moved into `extra_body`."""
    extra = params.get("extra_body")
    if extra is not None and not isinstance(extra, Mapping):
        return params
    moved = {
        key: params[key]
        for key in _MOVED
        if key in params and (extra is None or key not in extra) and _plain(params[key])
    }
    if not moved:
        return params
    out = {key: value for key, value in params.items() if key not in moved}
    if "messages" in moved:
        out["messages"] = []  # a required argument; the body's `messages` is the moved list
    out["extra_body"] = {**(extra or {}), **moved}
    return out


def _plain(value: object) -> bool:
    """Only dicts with string keys, lists and JSON scalars: what the walk leaves unchanged."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _SCALARS):
            continue
        if type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            for key, inner in item.items():
                if not isinstance(key, str):
                    return False
                stack.append(inner)
        else:
            return False
    return True
