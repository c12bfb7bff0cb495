"""The history window: what keeps a long conversation inside the model's context, and its
checkpoint small.

Once a thread's messages pass `SWITCHBOARD_HISTORY_TOKENS` (approximate tokens, counted before
each model call), the older part is summarised into one message and removed from the thread's
state, so the request, and the checkpoint that stores the state, stop growing with the
conversation. It is langchain's `SummarizationMiddleware` for `create_agent`, configured for
chat:

- it summarises down to half the window, so a summary is written about once per half-window of
  new conversation, not on every turn;
- the cut never separates an assistant's tool calls from their results (the middleware moves it
  to the call);
- what is summarised includes the previous summary (the first message), up to one window;
- the summary call runs with the same model or `SWITCHBOARD_SUMMARY_MODEL`, untagged for
  streaming (it never shows in the chat) and counted in the turn's usage like any model call.

Only the built-in agent has it: a custom graph or a LangGraph server keeps its own state.
"""

from __future__ import annotations

from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models import BaseChatModel

__all__ = ["SUMMARY_MARKER", "SUMMARY_PROMPT", "history_window"]

SUMMARY_MARKER = "Messages to summarize:"
"""The line before the conversation in a summary request (the demo model recognises it)."""

SUMMARY_PROMPT = f"""You keep the memory of a chat assistant. The conversation below is about to
be removed from its context and replaced by your summary, so write what the assistant needs to go
on: who the people are and what they asked for, facts and numbers they gave, what was decided or
answered, and anything still open. If the conversation starts with an earlier summary, keep what
still matters from it. Write plain sentences, at most 300 words; answer with the summary only.

<messages>
{SUMMARY_MARKER}
{{messages}}
</messages>"""


def history_window(
    model: BaseChatModel, *, tokens: int, summary_model: BaseChatModel | None = None
) -> SummarizationMiddleware | None:
    """The middleware for a window of `tokens` (None when 0: the whole history is sent)."""
    if tokens <= 0:
        return None
    return SummarizationMiddleware(
        model,
        trigger=("tokens", tokens),
        keep=("tokens", max(1, tokens // 2)),
        summary_prompt=SUMMARY_PROMPT,
        trim_tokens_to_summarize=tokens,
        summarizer=summary_model,
    )
