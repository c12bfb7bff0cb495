"""Which Slack Web API calls slack-sdk may send again after a connection error.

A connection error can come after Slack accepted the call (the response was lost on the way back).
Sending a read, an edit or a reaction again does no harm; sending `chat.postMessage`,
`chat.postEphemeral`, a stream call or a file upload again shows the user a second message. So the
connection-error retry applies only to the methods in `RETRY_SAFE`, named by the request's URL
(slack-sdk posts every method to `<base_url><method>`). A 429 is retried for every method: Slack
refused that call, so sending it again cannot repeat anything.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

__all__ = ["RETRY_SAFE", "IdempotentConnectionRetry", "api_method", "retry_handlers"]

RETRY_SAFE = frozenset(
    {
        # reads
        "auth.test",
        "bots.info",
        "conversations.history",
        "conversations.info",
        "conversations.members",
        "conversations.replies",
        "files.info",
        "team.info",
        "users.info",
        # a fresh Socket Mode URL each time; the unused one expires
        "apps.connections.open",
        # the same result however often they run (a repeat answers already_reacted, or
        # message_not_found after a delete)
        "assistant.threads.setStatus",
        "assistant.threads.setSuggestedPrompts",
        "assistant.threads.setTitle",
        "chat.delete",
        "chat.update",
        "reactions.add",
        "reactions.remove",
    }
)


def api_method(url: str) -> str:
    """`chat.postMessage` from `https://slack.com/api/chat.postMessage` (any base URL)."""
    return urlsplit(url).path.rsplit("/", 1)[-1]


class IdempotentConnectionRetry(AsyncConnectionErrorRetryHandler):
    """slack-sdk's connection-error retry, for the methods in `RETRY_SAFE` only."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if api_method(request.url) not in RETRY_SAFE:
            return False
        return await super()._can_retry_async(
            state=state, request=request, response=response, error=error
        )


def retry_handlers(*, rate_limit_retries: int = 3) -> list[AsyncRetryHandler]:
    """For `AsyncWebClient(retry_handlers=...)`."""
    return [
        IdempotentConnectionRetry(),
        AsyncRateLimitErrorRetryHandler(max_retry_count=rate_limit_retries),
    ]
