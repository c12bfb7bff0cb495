"""OpenAI chat requests whose messages and tools go out as langchain built them.

Before sending a chat completion, the openai SDK walks every parameter against its TypedDicts
(`async_maybe_transform`): about 0.15 ms of CPU per message on a 2-core machine, so 9 ms for a
60-message thread on every model call, more than the rest of a turn and growing with the thread.
For chat completions the walk changes nothing in data that is already plain JSON (no chat
request type has an alias or a format), and langchain-openai builds the messages and tools as
plain JSON. So they ride in `extra_body`, which the SDK merges into the request body as it is
(documented: its values take precedence over the arguments), and the walk sees an empty list.

Anything else goes the SDK's way: messages or tools holding a non-JSON value (a pydantic model,
an omitted marker, a tuple), or an `extra_body` of the caller's that already names them.

A streamed answer comes back the same way: each server-sent chunk as the dict the server wrote,
through the SDK's own `AsyncStream` (its SSE decoding, `[DONE]`, errors in the stream, timeouts)
with `cast_to=object`. The SDK would build a pydantic `ChatCompletionChunk` of every chunk, about
0.1 ms each, and langchain-openai would dump it back to a dict (it takes dicts as they are): 30 ms
of CPU for a 300-token answer. The request goes through `with_streaming_response.create`, so it
is made, retried and refused exactly as `create` makes it.

The wrapper keeps ChatOpenAI's public `client`/`async_client` fields working as before: every
other attribute is the SDK resource's own, so an upgrade that stops calling `create` loses only
speed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai import AsyncStream

__all__ = ["PlainJsonCompletions", "as_extra_body", "send_plain_json"]

_MOVED = ("messages", "tools")
_SCALARS = (str, int, float, bool, type(None))


def send_plain_json(model: Any) -> None:
    """Wrap a langchain-openai chat model's completion resources (sync and async) in place."""
    for field, root in (("client", None), ("async_client", "root_async_client")):
        resource = getattr(model, field, None)
        if resource is not None and not isinstance(resource, PlainJsonCompletions):
            client = getattr(model, root, None) if root else None
            setattr(model, field, PlainJsonCompletions(resource, client))


class PlainJsonCompletions:
    """`chat.completions` whose `create` sends plain messages and tools as is; given the async
    client it belongs to, a streamed answer's chunks come back as dicts."""

    def __init__(self, completions: Any, client: Any = None) -> None:
        self._completions = completions
        self._client = client

    def create(self, **params: Any) -> Any:
        params = as_extra_body(params)
        if self._client is not None and params.get("stream") is True:
            return self._dict_chunks(params)
        return self._completions.create(**params)

    async def _dict_chunks(self, params: dict[str, Any]) -> AsyncStream[object]:
        opened = self._completions.with_streaming_response.create(**params)
        response = await opened.__aenter__()  # the stream closes the response, as `create`'s does
        return AsyncStream(cast_to=object, response=response.http_response, client=self._client)

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
